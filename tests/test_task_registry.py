"""Task names (tasks/registry.py ``make_task``): a name close to a built-in
task's is refused with the name meant, a name of its own is a custom task, which says what it
runs."""

from __future__ import annotations

import pytest
from offline_runs import one_line

from localeval.cli import main
from localeval.errors import LocalevalError
from localeval.tasks.registry import make_task


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
