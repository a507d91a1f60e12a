"""lm-evaluation-harness's flags on ``localeval run`` (issue 69, its first item): the same
meaning is taken as ours, another meaning is one line naming ours (before: "unknown option",
or "the following arguments are required: --task" for ``--tasks``)."""

from __future__ import annotations

import json

import pytest
from offline_runs import one_line, stand_in_model
from test_run_spec import SaysB

import localeval.run
from localeval.cli import main
from localeval.cli.habits import from_lm_eval
from localeval.demo.mcq import SAMPLE_MCQ


def test_an_lm_eval_command_line_runs_as_ours(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(localeval.run, "load_backend", lambda spec, **kw: SaysB())
    out = tmp_path / "run"
    assert main(["run", "--tasks", "tmlu", "--data", str(SAMPLE_MCQ), "--model",
                 stand_in_model(), "--num_fewshot", "2", "--output_path", str(out),
                 "--batch_size", "4", "--log_samples", "--method", "generation", "--no-store", "--no-report",
                 "--quiet"]) == 0
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert (config["task"], config["prompt"]["shots"]) == ("tmlu", 2)
    assert (out / "samples.jsonl").exists()
    assert "--log_samples is lm-eval's and needs no flag here" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "needles"), [
    (["--tasks", "tmlu,cmmlu"], ("a localeval run is one task, --task NAME",)),
    (["--task", "tmlu", "--apply_chat_template"], ("--chat single", "--chat multi")),
    (["--task", "tmlu", "--fewshot-as-multiturn"], ("--chat multi",)),
])
def test_an_lm_eval_flag_of_another_meaning_is_answered_in_one_line(argv, needles, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["run", *argv, "--model", "hf:nowhere"])
    assert stopped.value.code == 2
    one_line(capsys, *needles)


def test_an_lm_eval_flag_of_the_same_meaning_is_checked_as_ours(capsys):
    assert main(["run", "--tasks=tmlu", "--num-fewshot=9", "--model", "hf:nowhere"]) == 2
    one_line(capsys, "--shots must be 0 to 5, not 9")


def test_only_run_reads_lm_eval_flags():
    """Another command's arguments are left as given; a value is never taken for a flag."""
    assert from_lm_eval(["show", "runs/x"]) == (["show", "runs/x"], [])
    assert from_lm_eval(["run", "--num_fewshot=3"]) == (["run", "--shots=3"], [])


def test_seed_is_ours_and_a_run_that_draws_nothing_says_so(capsys):
    """Issue 69: --seed was "unknown option" though the README speaks of seeded draws; ours
    seeds the sampled draws (tests/test_seed.py), and a run that draws nothing says so."""
    assert main(["run", "--task", "tmlu", "--seed", "3", "--model", "hf:nowhere"]) == 2
    one_line(capsys, "--seed seeds the sampled draws of --repeats N")
