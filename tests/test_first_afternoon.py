"""Issue 36: what a researcher sees on a first afternoon. Each test is one stumble: a typo or a
mistake that ran another protocol, or an error line that named the wrong cause."""

from __future__ import annotations

import pytest

from localeval.cli import main
from localeval.errors import LocalevalError
from localeval.tasks.registry import make_task


@pytest.fixture
def cmmlu(shared):
    return str(shared / "data" / "cmmlu")


def one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err.strip()


# ------------------------------------------------------------------ item 1: task names
@pytest.mark.parametrize("typo, meant", [("cmmu", "cmmlu"), ("CMMLU", "cmmlu"),
                                         ("tmmlu", "tmlu"), ("tmmlplus", "tmmluplus"),
                                         ("sea-safegaurd", "sea-safeguard")])
def test_a_task_name_close_to_a_builtin_one_is_refused(typo, meant, cmmlu, model_folder,
                                                        no_model_load, capsys):
    """`run --task cmmu --data ../shared/data/cmmlu` ran a custom task (TMLU header, every
    subject under Other, task 'cmmu' in the store); now one line naming the task meant."""
    assert main(["run", "--task", typo, "--data", cmmlu, "--model", model_folder]) == 2
    line = one_line(capsys)
    assert line.startswith(f"error: unknown task {typo!r}; did you mean {meant}"), line


def test_a_custom_task_says_what_it_runs(cmmlu, capsys):
    """Once its data loaded (an error in the data stays one line), before the model loads."""
    make_task("my-exam", data=cmmlu, subjects=["arts"]).load()
    err = capsys.readouterr().err
    assert "'my-exam' is a custom task" in err
    assert "prompt style is tmlu (--prompt-style lm-eval" in err
    assert "grouped under one discipline, Other" in err and "--task tmlu / cmmlu" in err
    make_task("my-exam", data=cmmlu, subjects=["arts"], prompt_style="lm-eval").load()
    assert "prompt style is lm-eval (--prompt-style tmlu" in capsys.readouterr().err
    make_task("cmmlu", data=cmmlu, subjects=["arts"]).load()  # a built-in task says nothing
    assert capsys.readouterr().err == ""


def test_names_of_their_own_are_custom_tasks(cmmlu):
    for name in ("mytmlu", "cmmlu-local", "tmmluplus-sample"):
        assert make_task(name, data=cmmlu).name == name
    with pytest.raises(LocalevalError, match="did you mean cmmlu"):
        make_task("cmmu")  # without --data too


# ------------------------------------------------------------------ item 2: --lang
@pytest.fixture
def jbb(shared):
    return str(shared / "data" / "jbb-multilingual" / "prompts.jsonl")


@pytest.mark.parametrize("langs, line", [
    ("en,xx", "unknown language 'xx' (the data holds ar, bn, en, ko, th, vi, zh)"),
    ("en,vn", "unknown language 'vn' (did you mean vi? the data holds ar, bn, en, ko, th, vi, "
              "zh)"),
    ("vn", "unknown language 'vn' (did you mean vi?"),
    ("EN", "unknown language 'EN' (did you mean en?"),
])
def test_an_unknown_language_is_refused(langs, line, jbb, model_folder, no_model_load, capsys):
    """`--lang en,xx` exited 0 with English only; `vn` silently dropped Vietnamese."""
    argv = ["run", "--task", "safety-prompts", "--data", jbb, "--guard", "llamaguard3",
            "--model", model_folder, "--lang", langs]
    assert main(argv) == 2
    assert one_line(capsys).startswith(f"error: --lang: {line}")


def test_an_unknown_language_for_the_hub_benchmark_is_refused_before_loading():
    from localeval.tasks.safety_items import load_safety_items

    with pytest.raises(LocalevalError, match=r"'vn' \(did you mean vi\? the data holds en, id, "
                                             r"ms, my, ta, th, tl, vi\)"):
        load_safety_items("sea-safeguard", None, langs=["en", "vn"])


# ------------------------------------------------------------------ item 9: the right cause
def run_line(argv, capsys) -> str:
    assert main(argv) == 2
    return one_line(capsys)


def test_a_multiple_choice_folder_given_to_safety_prompts(cmmlu, model_folder, no_model_load,
                                                          capsys):
    """It said `subjects.json, row 1: not valid JSON` (the file is valid JSON)."""
    line = run_line(["run", "--task", "safety-prompts", "--data", cmmlu, "--guard",
                     "llamaguard3", "--model", model_folder], capsys)
    assert f"--data {cmmlu} is a multiple-choice folder" in line and "--task cmmlu" in line
    line = run_line(["run", "--task", "safety-prompts", "--data", f"{cmmlu}/subjects.json",
                     "--guard", "llamaguard3", "--model", model_folder], capsys)
    assert "subjects.json, row 1: one JSON document over several lines, not JSON Lines" in line


@pytest.mark.parametrize("text, message", [
    ("question,A,B,C,answer\nq1,a,b,c,D\n",  # was: answer 'D' is not one of the options A, B, C
     "row 2, field 'answer': answer 'D' is not one of the options A, B, C: the file has no "
     "column D"),
    ("question;A;B;C;D;answer\nq1;a;b;c;d;A\n",  # was: missing column 'question'
     "row 1: the header is one column, 'question;A;B;C;D;answer': the file is separated by "
     "semicolons; save it as comma-separated CSV"),
])
def test_a_csv_that_is_not_what_it_seems(text, message, tmp_path, model_folder, no_model_load,
                                         capsys):
    (tmp_path / "exam.csv").write_text(text)
    line = run_line(["run", "--task", "my-exam", "--data", str(tmp_path / "exam.csv"),
                     "--shots", "0", "--model", model_folder], capsys)
    assert line.endswith(message), line


def test_a_model_folder_without_weights_is_refused_before_the_data(tmp_path, cmmlu, capsys,
                                                                   no_model_load):
    """It failed after a `0/2` progress bar with Hub advice (`hf auth login`)."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "tokenizer.json").write_text("{}")
    line = run_line(["run", "--task", "cmmlu", "--data", cmmlu, "--subjects", "agronomy",
                     "--limit", "2", "--model", f"hf:{folder}"], capsys)
    assert line == (f"error: model folder {folder} has no weights (model.safetensors, "
                    "pytorch_model.bin or a sharded index of them); give the folder that "
                    "save_pretrained wrote")
    (folder / "config.json").unlink()
    assert "has no config.json" in run_line(["run", "--task", "cmmlu", "--model",
                                             f"hf:{folder}"], capsys)


@pytest.mark.parametrize("argv, line", [
    (["run", "--model", "hf:x"], "localeval run: error: the following arguments are required: "
                                 "--task; `localeval run --help` shows the options"),
    (["run", "--task", "cmmlu", "--methd", "likelihood"],
     "localeval run: error: unknown option --methd (did you mean --method?); `localeval run "
     "--help` shows the options"),
    (["show", "a", "b"], "localeval show: error: unexpected argument 'b'; `localeval show "
                         "--help` shows the options"),
])
def test_command_line_mistakes_are_one_line(argv, line, capsys):
    """A forgotten --task printed 25 lines of usage; --methd the top-level usage."""
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert one_line(capsys) == line


def test_an_option_no_model_takes_ends_its_sentence(cmmlu, model_folder, no_model_load,
                                                    capsys):
    line = run_line(["run", "--task", "cmmlu", "--data", cmmlu, "--model", model_folder,
                     "--base-url", "http://127.0.0.1:8000/v1"], capsys)
    assert line.endswith("`localeval run --help` lists each backend's options"), line


# ------------------------------------------------------------------ item 10: Python API
def test_a_string_for_a_list_option_is_one_item_or_a_comma_list(cmmlu, tmp_path):
    """`evaluate(..., subjects='arts')` read the string letter by letter (`subject(s) a, r, s, t
    not found`)."""
    assert make_task("cmmlu", data=cmmlu, subjects="arts").options.subjects == ["arts"]
    both = make_task("cmmlu", data=cmmlu, subjects="arts, virology")
    assert both.options.subjects == ["arts", "virology"]
    assert [s for s, _, _ in make_task("cmmlu", data=cmmlu, subjects="arts").load().subjects] \
        == ["arts"]
    safety = make_task("safety-prompts", data="x.jsonl", langs="en,th", subsets="prompts",
                       classify="prompt")
    assert (safety.options.langs, safety.options.subsets) == (["en", "th"], ["prompts"])
    contamination = make_task("contamination", data=str(tmp_path / "a.jsonl"), k="10,20")
    assert contamination.sources == [str(tmp_path / "a.jsonl")]
    assert list(contamination.options.k) == [10.0, 20.0]
    assert list(make_task("contamination", data=tmp_path / "a.jsonl", k=20).options.k) == [20]
    with pytest.raises(LocalevalError, match="k='ten': expected comma-separated numbers"):
        make_task("contamination", data="a.jsonl", k="ten")


def test_evaluate_with_one_subject_as_text(cmmlu, no_model_load, model_folder):
    import localeval

    with pytest.raises(AssertionError, match="a model was loaded"):  # past every data check
        localeval.evaluate(task="cmmlu", model=model_folder, data=cmmlu, subjects="arts")


# ------------------------------------------------------------------ item 6: warnings
def test_warnings_that_qualify_a_number_are_shown_with_quiet_and_kept(tmp_path, capsys):
    """`--quiet` hid `cultural awareness: 24 items without a country left out`, which changes
    what the PR-AUCs are over."""
    from offline_runs import safeguard_run

    record = safeguard_run(tmp_path / "aware", guard_options={"cultural_awareness": True})
    left_out = [w for w in record.results.warnings if "items without a country left out" in w]
    assert left_out  # recorded in results.json's warnings
    err = capsys.readouterr().err  # the run was quiet=True
    for warning in record.results.warnings:
        assert f"warning: {warning}\n" in err


def test_third_party_deprecations_are_silenced_unless_debug(tmp_path):
    """transformers' `past_key_values is deprecated` (a FutureWarning and a log line) printed on
    every hf: run, --quiet or not; it is for transformers' users' developers, not a result."""
    import subprocess
    import sys

    probe = ("import sys, warnings, logging\n"
             "from localeval.cli import main, quiet_third_party\n"
             "if '--debug' not in sys.argv: quiet_third_party()\n"
             "from transformers.utils import logging as tlog\n"
             "tlog.get_logger('transformers.x').warning('past_key_values are deprecated')\n"
             "warnings.warn('`past_key_values` is deprecated', FutureWarning)\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != "TRANSFORMERS_VERBOSITY"}
    quiet = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                           env=env, check=True)
    assert quiet.stderr == ""
    debug = subprocess.run([sys.executable, "-c", probe, "--debug"], capture_output=True,
                           text=True, env=env, check=True)
    assert "[transformers] past_key_values are deprecated" in debug.stderr
    assert "FutureWarning: `past_key_values` is deprecated" in debug.stderr


@pytest.mark.slow
def test_an_hf_run_prints_no_transformers_deprecation(tiny_llama, cmmlu, tmp_path):
    import subprocess
    import sys

    argv = [sys.executable, "-m", "localeval.cli", "run", "--task", "cmmlu", "--data", cmmlu,
            "--subjects", "agronomy", "--limit", "2", "--model", f"hf:{tiny_llama}", "--quiet",
            "--no-store"]
    env = {k: v for k, v in __import__("os").environ.items() if k != "TRANSFORMERS_VERBOSITY"}
    done = subprocess.run([*argv, "--output", str(tmp_path / "a")], capture_output=True,
                          text=True, env=env, check=True)
    assert "deprecated" not in done.stderr and "Warning" not in done.stderr, done.stderr
    # --debug shows third-party notices (test_third_party_deprecations_are_silenced_unless_debug);
    # transformers' `past_key_values` one is not there to show: the KV cache is passed as
    # `cache` where transformers takes it (backends/hf/kv_cache.py)
    debug = subprocess.run([*argv, "--output", str(tmp_path / "b"), "--debug"],
                           capture_output=True, text=True, env=env, check=True)
    assert "past_key_values" not in debug.stderr and "cache_params" not in debug.stderr


# ------------------------------------------------------------------ item 15: small ones
def test_duplicate_prompts_say_why_the_bar_counts_fewer(capsys):
    """The bar said `1361/1361 questions` where results said 1362: a question twice in the data
    is one request."""
    from offline_runs import AlwaysLetter

    from localeval.backends.base import Response, ScoreNext
    from localeval.store.executor import CachedExecutor

    requests = [ScoreNext(prompt=q, candidates=("A", "B")) for q in ("q1", "q2", "q1")]
    answers = CachedExecutor(AlwaysLetter("A"), None, False, "questions")(requests)
    assert len(answers) == 3 and all(isinstance(a, Response) for a in answers)
    assert ("note: 1 of 3 requests repeat another's prompt exactly (the same question twice in "
            "the data): each is sent once, so the bar counts 2") in capsys.readouterr().err
    CachedExecutor(AlwaysLetter("A"), None, False, "questions")(requests[:2])
    assert "repeat" not in capsys.readouterr().err


def test_browser_tests_skip_without_playwright(tmp_path):
    """`pytest -m "not slow"` failed (not skipped) where playwright is not installed."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    blocked = tmp_path / "blocked" / "playwright"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError('no playwright here')\n")
    tests = Path(__file__).parent
    # nor the options of the run around it (.ci/run's PYTEST_ADDOPTS: workers, a JUnit file)
    env = {k: v for k, v in os.environ.items()
           if k not in ("LOCALEVAL_REQUIRE_CHROMIUM", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = os.pathsep.join([str(blocked.parent), *sys.path])
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-m", "not slow", "-rs", str(tests / "test_report_long_text.py")],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:]
    assert "playwright not installed" in done.stdout


def test_a_subject_outside_the_tasks_list_is_said_and_recorded(shared, tmp_path, capsys):
    """The TMMLU+ sample (test.jsonl in a folder: subject 'tmmluplus-sample') showed only
    `Average -`, with nothing saying why."""
    from offline_runs import AlwaysLetter

    from localeval import evaluate

    record = evaluate(task="tmmluplus", model=AlwaysLetter("A"), shots=0, quiet=True,
                      data=shared / "data" / "tmmluplus-sample", output=tmp_path / "r")
    assert record.results.metrics.discipline_average is None
    (warning,) = record.results.warnings
    assert warning.startswith("1 subject(s) not among tmmluplus's: tmmluplus-sample; in no "
                              "discipline, so no column and no Average counts them")
    assert f"warning: {warning}" in capsys.readouterr().err
    again = evaluate(task="cmmlu", model=AlwaysLetter("A"), shots=0, quiet=True, limit=2,
                     data=shared / "data" / "cmmlu", subjects="arts", output=tmp_path / "c")
    assert again.results.warnings == []


@pytest.mark.slow
def test_the_demo_rerun_recomputes_nothing(tmp_path):
    """The demo kept no cache: its rerun recomputed every request (36 s)."""
    import json

    from localeval.demo.run import run_demo

    for _ in range(2):
        run_demo(tmp_path / "demo", quiet=True)
    for run in ("tmlu-likelihood", "sea-safeguard"):
        results = json.loads((tmp_path / "demo" / run / "results.json").read_text())
        rerun = results["history"][-1]
        assert rerun["requests_run"] == 0 and rerun["requests_cached"] > 0, (run, rerun)
