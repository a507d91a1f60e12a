"""One policy for input the run cannot use: a flag of another kind of task, an option the task
does not have (-T), a backend option no model of the run takes, a role option for a role the
task does not have, and a second model that does not exist are each one line and exit 2 before
any model loads (the model loader is replaced by one that fails the test). And one typing rule
for every KEY=VALUE option."""

from __future__ import annotations

import json

import pytest

from localeval.cli import main
from localeval.declared import parse_declared, plain_value
from localeval.demo.mcq import SAMPLE_MCQ


@pytest.fixture(autouse=True)
def _no_model_load(no_model_load):
    """Every test here must fail before a model loads (conftest's no_model_load)."""


def error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("argv, message", [
    (["--task", "tmlu", "--guard", "llamaguard3"],
     "--guard is not an option of task 'tmlu' (Multiple choice"),
    (["--task", "sea-safeguard", "--shots", "5"],
     "--shots is not an option of task 'sea-safeguard' (Safeguards"),
    (["--task", "tmlu", "--cultural-awareness"],
     "--cultural-awareness is not an option of task 'tmlu'"),
    (["--task", "llm-safety", "--guard-option", "mode=x"],
     "--guard-option is not an option of task 'llm-safety'"),
    (["--task", "tmlu", "-T", "colour=red"], "-T colour: task 'tmlu' has no such option"),
    (["--task", "tmlu", "--base-url", "http://127.0.0.1:9/v1"],
     "--base-url: not an option of the backend of any model of this run (hf"),
    (["--task", "tmlu", "--model-args", "x=1", "--model", "openai:x"],
     "--model-args: not an option of the backend of any model of this run (openai"),
    (["--task", "tmlu", "--role-option", "judge.device=cpu"],
     "this task has no model role 'judge'"),
    (["--task", "tmlu", "--role-option", "device=cpu"], "write ROLE.KEY=VALUE"),
    (["--task", "tmlu", "--batch-size", "0"], "--batch-size must be 'auto' or a positive"),
])
def test_input_the_run_cannot_use_is_one_line_before_any_model_loads(argv, message, capsys,
                                                                     model_folder):
    if "--model" not in argv:
        argv = [*argv, "--model", model_folder]
    assert main(["run", *argv, "--data", str(SAMPLE_MCQ), "--no-store"]) == 2
    assert message in error_line(capsys)


def test_a_missing_judge_model_is_one_line_before_any_model_loads(capsys, model_folder,
                                                                  tmp_path):
    data = tmp_path / "prompts.jsonl"
    data.write_text(json.dumps({"id": "1", "lang": "en", "prompt": "hi", "label": "safe"}))
    assert main(["run", "--task", "llm-safety", "--model", model_folder, "--data", str(data),
                 "--judge-model", f"hf:{tmp_path / 'nowhere'}", "--refusal", "detector",
                 "--no-store"]) == 2
    assert "model folder" in error_line(capsys)


def test_a_role_option_its_backend_does_not_take(capsys, model_folder, tmp_path):
    assert main(["run", "--task", "llm-safety", "--model", model_folder, "--judge-model",
                 model_folder, "--refusal-judge-model", model_folder, "--role-option",
                 "judge.base_url=http://x/v1", "--data", str(tmp_path / "p.jsonl")]) == 2
    assert "--base-url: not an option of the hf backend of the judge" in error_line(capsys)


def test_an_option_a_role_takes_is_not_refused_for_the_target(capsys, model_folder, tmp_path):
    """--device reaches the judge too; --top-logprobs, which only a server takes, is refused
    because no model of this run is a server."""
    args = ["run", "--task", "llm-safety", "--model", model_folder, "--judge-model",
            model_folder, "--refusal", "detector", "--data", str(tmp_path / "missing.jsonl"),
            "--no-store"]
    assert main([*args, "--top-logprobs", "5"]) == 2
    assert "--top-logprobs: not an option" in error_line(capsys)
    assert main([*args, "--device", "cpu"]) == 2  # gets as far as the data
    assert "missing.jsonl" in error_line(capsys)


def test_dash_t_sets_any_option_as_its_flag_would():
    from localeval.cli import parser, task_options

    args = parser().parse_args(["run", "--task", "sea-safeguard", "-T", "subsets=general,"
                                "cultural-cg", "-T", "n_resamples=10", "-T", "auprc=ap"])
    options = task_options(args)
    assert options["subsets"] == ["general", "cultural-cg"] and options["n_resamples"] == 10
    assert options["auprc"] == "ap" and options["guard"] == "zero-shot"


def test_undeclared_values_are_typed_as_lm_eval_types_them():
    assert [plain_value(v) for v in ("none", "TRUE", "false", "3", "0.3", "1e-3", "a,b",
                                     " x ")] == [None, True, False, 3, 0.3, 0.001, "a,b", "x"]
    assert parse_declared("dict | None", "t=0.3,n=2,X-Team=a", "--model-args") == \
        {"t": 0.3, "n": 2, "X-Team": "a"}  # keys as written
