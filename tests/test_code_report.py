"""The code report CI prints (.ci/code_report.py): complexity, length and the one-line forms
that squeeze code, counted on a module written here, so each number is checked by hand."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / ".ci" / "code_report.py"

SAMPLE = '''"""A module."""

# a comment line


def plain(x):
    return x


def branching(x, y):
    a, b = x, y  # packed
    if a:
        return b if y else a  # one conditional
    for i in range(3):
        if i and y:
            return i
    return 1 if x else 2 if y else 3  # chained: two conditionals, one inside the other
'''


def _module():
    spec = importlib.util.spec_from_file_location("code_report", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["code_report"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_each_count_on_a_module_counted_by_hand(tmp_path):
    (tmp_path / "sample.py").write_text(SAMPLE, encoding="utf-8")
    found = _module().report(tmp_path)
    (module,) = found["longest"]
    assert (module["lines"], module["code_lines"]) == (17, 11)  # 6 blank or comment lines
    assert (module["packed_assignments"], module["conditional_expressions"],
            module["chained_conditionals"]) == (1, 3, 1)
    # radon: branching = 1 + if + conditional + for + if + and + two conditionals = 8
    assert found["most_complex"] == [{"where": "sample.py:branching", "complexity": 8},
                                     {"where": "sample.py:plain", "complexity": 1}]
    assert found["complexity_bands"]["6-10"] == 1 and found["complexity_bands"]["1-5"] == 1
    assert found["per_1000_code_lines"]["packed_assignments"] == round(1000 / 11, 1)


def test_it_prints_and_never_fails_on_our_code():
    done = subprocess.run([sys.executable, str(SCRIPT), "--top", "3"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("code report: ") and "most complex 3:" in done.stdout
