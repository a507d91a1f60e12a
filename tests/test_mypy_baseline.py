"""The mypy baseline's bookkeeping (.ci/mypy_baseline.py, issue 44 item 1), on made-up mypy
output: how errors are keyed, counted and compared, which modules are strict, and which outputs
mean mypy did not run. mypy itself is not run here (it takes a minute; .ci/run runs it)."""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / ".ci" / "mypy_baseline.py"
_spec = importlib.util.spec_from_file_location("mypy_baseline", SCRIPT)
mypy_baseline = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mypy_baseline)

OUTPUT = """\
src/localeval/run.py:12: error: Missing type arguments for generic type "dict"  [type-arg]
src/localeval/run.py:40: error: Missing type arguments for generic type "dict"  [type-arg]
src/localeval/run.py:40: note: See https://mypy.readthedocs.io/en/stable/
src/localeval/cli/main.py:7:5: error: Name "x" is not defined  [name-defined]
Found 3 errors in 2 files (checked 188 source files)
"""
DICT_KEY = 'src/localeval/run.py: [type-arg] Missing type arguments for generic type "dict"'


def test_an_error_is_keyed_without_its_line_and_column():
    assert mypy_baseline.error_key(OUTPUT.splitlines()[0]) == DICT_KEY
    assert mypy_baseline.error_key(OUTPUT.splitlines()[3]) == \
        'src/localeval/cli/main.py: [name-defined] Name "x" is not defined'
    for other in OUTPUT.splitlines()[2], OUTPUT.splitlines()[4]:  # a note, the summary
        assert mypy_baseline.error_key(other) is None


def test_a_message_with_brackets_keeps_them_and_an_error_without_code_is_kept():
    line = 'a.py:3: error: Unsupported operand types for + ("list[int]" and "int")  [operator]'
    assert mypy_baseline.error_key(line) == \
        'a.py: [operator] Unsupported operand types for + ("list[int]" and "int")'
    assert mypy_baseline.error_key("a.py:3: error: Something") == "a.py: [no-code] Something"


def test_errors_are_a_multiset_with_mypys_lines():
    errors = mypy_baseline.errors_in(OUTPUT)
    assert [len(lines) for lines in errors.values()] == [2, 1]
    assert errors[DICT_KEY][1].startswith("src/localeval/run.py:40: error:")


def test_the_baseline_round_trips_sorted_with_its_duplicates():
    errors = mypy_baseline.errors_in(OUTPUT)
    text = mypy_baseline.baseline_text(errors)
    assert text.startswith("#") and "--update" in text
    entries = [line for line in text.splitlines() if not line.startswith("#")]
    assert entries == sorted(entries) and len(entries) == 3
    assert mypy_baseline.read_baseline(text) == Counter({DICT_KEY: 2, entries[0]: 1})


def test_one_more_of_a_baselined_error_is_new_and_one_less_is_gone():
    errors = mypy_baseline.errors_in(OUTPUT)
    assert mypy_baseline.new_errors(errors, Counter({DICT_KEY: 2})) == \
        {k: v for k, v in errors.items() if k != DICT_KEY}  # the name-defined error is new
    allowed_one = mypy_baseline.new_errors(errors, Counter({DICT_KEY: 1}))
    assert len(allowed_one[DICT_KEY]) == 2  # both lines shown: which one is new is unknown
    everything = mypy_baseline.read_baseline(mypy_baseline.baseline_text(errors))
    assert mypy_baseline.new_errors(errors, everything) == {}
    fixed = mypy_baseline.errors_in(OUTPUT.replace("run.py:40: error", "run.py:40: note"))
    assert mypy_baseline.gone_errors(fixed, everything) == Counter({DICT_KEY: 1})


PATTERNS = ["localeval.records.*", "localeval.declared", "localeval.backends.base"]


@pytest.mark.parametrize(("path", "strict"), [
    ("src/localeval/records/base.py", True),
    ("src/localeval/records/__init__.py", True),
    ("src/localeval/declared.py", True),
    ("src/localeval/backends/base.py", True),
    ("src/localeval/backends/hf/base.py", False),
    ("src/localeval/records_extra.py", False),
    ("src/localeval/declared_more.py", False),
])
def test_strict_modules_are_matched_as_mypy_reads_the_patterns(path, strict):
    assert mypy_baseline.is_strict(f"{path}: [misc] Something", PATTERNS) is strict


def test_the_strict_patterns_are_read_from_pyprojects_strict_override():
    pyproject = (SCRIPT.parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    patterns = mypy_baseline.strict_patterns(pyproject)
    assert {"localeval.records.*", "localeval.metrics.*", "localeval.declared",
            "localeval.backends.base"} <= set(patterns)


@pytest.mark.parametrize(("returncode", "stdout", "stderr"), [
    (2, "Found 1 error in 1 file (errors prevented further checking)\n", ""),  # a syntax error
    (2, "", "Traceback (most recent call last):\n  ...\n"),  # a crash
    (1, OUTPUT, "pyproject.toml: [mypy]: Unrecognized option: bogus = True\n"),
    (1, OUTPUT + "pyproject.toml: note: unused section(s): module = ['gone.*']\n", ""),
    (1, OUTPUT.replace("Found 3 errors", "Found 4 errors"), ""),  # a line the pattern missed
    (0, "", ""),  # no summary at all
])
def test_an_output_that_is_not_a_full_check_is_no_count_of_errors(returncode, stdout, stderr):
    with pytest.raises(mypy_baseline.MypyDidNotRun):
        mypy_baseline.check_ran(returncode, stdout, stderr)


def test_a_full_check_is_accepted():
    mypy_baseline.check_ran(1, OUTPUT, "")
    mypy_baseline.check_ran(0, "Success: no issues found in 188 source files\n", "")
