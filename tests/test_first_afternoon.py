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
    make_task("my-exam", data=cmmlu)
    err = capsys.readouterr().err
    assert "'my-exam' is a custom task" in err
    assert "prompt style is tmlu (--prompt-style lm-eval" in err
    assert "grouped under one discipline, Other" in err and "--task tmlu / cmmlu" in err
    make_task("my-exam", data=cmmlu, prompt_style="lm-eval")
    assert "prompt style is lm-eval (--prompt-style tmlu" in capsys.readouterr().err
    make_task("cmmlu", data=cmmlu)  # a built-in task says nothing
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
