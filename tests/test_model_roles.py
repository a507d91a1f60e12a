"""Second models go through the run lifecycle by role: the judge of llm-safety and X-Guard's
translator are checked before any model loads, get the run's model options that their backend
takes plus their own (--role-option), and are recorded in config.json. And a results.json of a
kind of task localeval does not know is one clear error, never read as another kind."""

from __future__ import annotations

import json

import pytest

import localeval.run
from localeval.backends.base import Backend, Generated, NextLogprobs, ScoreNext
from localeval.cli import main


class StubModel(Backend):
    """Answers every request at once: text for generations, equal log-probs for scoring."""

    def __init__(self, spec):
        self.identity = {"backend": "stub", "model": spec}

    def run(self, requests, progress=None):
        # equal log-probs, the labels the two most likely tokens (ranks 1 and 2) when asked
        return [NextLogprobs(logprobs={c: -1.0 for c in r.candidates},
                             ranks=None if r.top is None else {c: 1 for c in r.candidates})
                if isinstance(r, ScoreNext)
                else Generated(text="I cannot help with that.") for r in requests]


@pytest.fixture
def loads(monkeypatch):
    """Every model the run loads: (spec, config), in order; each is a StubModel."""
    seen = []

    def load(spec, config=None):
        seen.append((spec, config))
        return StubModel(spec)
    monkeypatch.setattr(localeval.run, "load_backend", load)
    return seen


@pytest.fixture
def folders(tmp_path):
    out = []
    for name in ("target", "judge"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text("{}")
        (tmp_path / name / "model.safetensors").write_bytes(b"")
        out.append(f"hf:{tmp_path / name}")
    return out


def test_the_judge_gets_the_run_options_and_its_own(shared, folders, loads, tmp_path, capsys):
    target, judge = folders
    data = shared / "data" / "jbb-multilingual" / "prompts.jsonl"
    assert main(["run", "--task", "llm-safety", "--model", target, "--judge-model", judge,
                 "--data", str(data), "--limit", "1", "--device", "cpu", "--role-option",
                 "judge.dtype=float32", "--refusal", "detector", "--greedy", "--bootstrap", "0", "--output", str(tmp_path / "run"),
                 "--quiet", "--no-store"]) == 0
    (target_spec, target_config), (judge_spec, judge_config) = loads
    assert (target_spec, judge_spec) == (target, judge)
    assert target_config.device == judge_config.device == "cpu"  # the run's option reaches both
    assert (target_config.dtype, judge_config.dtype) == ("auto", "float32")  # its own, alone
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["model_roles"] == {"judge": {"model": judge,
                                               "options": {"device": "cpu", "dtype": "float32"}}}
    assert config["role_backends"] == {"judge": {"backend": "stub", "model": judge}}
    assert config["judge_model"] == judge


def test_a_missing_translator_is_one_line_before_any_model_loads(shared, folders, loads,
                                                                 tmp_path, capsys):
    data = shared / "data" / "jbb-multilingual" / "prompts.jsonl"
    assert main(["run", "--task", "safety-prompts", "--guard", "xguard", "--guard-option",
                 f"translator={tmp_path / 'nowhere'}", "--model", folders[0], "--data",
                 str(data), "--no-store"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"model folder {tmp_path / 'nowhere'} not found" in err
    assert loads == []


def test_an_unknown_results_schema_is_one_clear_error(tmp_path, capsys):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"task": "x", "run": {"status": "finished"}}))
    (folder / "results.json").write_text(json.dumps({"schema": "localeval.nope/9"}))
    (folder / "samples.jsonl").write_text("")
    for argv in (["show", str(folder)], ["export", str(folder)], ["report", str(folder)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "schema 'localeval.nope/9' are of no task kind" in err
