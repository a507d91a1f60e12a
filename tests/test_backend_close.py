"""A run closes every backend it built (the model and each second model: a judge, a
translator) when it ends, finished or failed, so an engine (vLLM's, with its own processes) is
shut down by the run rather than by finalizers at interpreter exit; a backend object the
caller passed in stays open, as it is the caller's. The backends here are the test's own,
counting their ``close()`` calls, loaded through the run's real loader hook."""

from __future__ import annotations

import pytest

import localeval.run
from localeval import evaluate
from localeval.backends.base import Backend as BackendBase
from localeval.backends.base import Generated, NextLogprobs, ScoreNext
from localeval.cli import main


class Counting(BackendBase):
    """Answers every request (equal log-probs, a refusal text) and counts its closes."""

    def __init__(self, spec: str, fail: bool = False):
        self.identity = {"backend": "counting", "model": spec}
        self.fail, self.closed = fail, 0

    def run(self, requests, progress=None):
        if self.fail:
            raise RuntimeError("the engine died")
        # equal log-probs, the candidates ranked 1 where a top k is asked (a judge's labels)
        return [NextLogprobs(logprobs={c: -1.0 for c in r.candidates},
                             ranks=None if r.top is None else {c: 1 for c in r.candidates})
                if isinstance(r, ScoreNext)
                else Generated(text="I cannot help with that.") for r in requests]

    def close(self) -> None:
        self.closed += 1


@pytest.fixture
def built(monkeypatch):
    """Every backend the run loads from a spec, in order."""
    out: list[Counting] = []

    def load(spec, config=None):
        out.append(Counting(spec, fail="dies" in spec))
        return out[-1]
    monkeypatch.setattr(localeval.run, "load_backend", load)
    return out


@pytest.fixture
def models(tmp_path):
    """Three model folders that pass the pre-load checks: a model, a judge, one that dies."""
    out = []
    for name in ("target", "judge", "dies"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text("{}")
        (tmp_path / name / "model.safetensors").write_bytes(b"")
        out.append(f"hf:{tmp_path / name}")
    return out


def _cmmlu(shared, model, tmp_path) -> list[str]:
    return ["run", "--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"), "--subjects",
            "arts", "--limit", "2", "--model", model, "--output", str(tmp_path / "run"),
            "--quiet", "--no-store"]


def test_a_finished_run_closes_its_model_and_its_judge(shared, models, built, tmp_path):
    data = shared / "data" / "jbb-multilingual" / "prompts.jsonl"
    assert main(["run", "--task", "llm-safety", "--model", models[0], "--judge-model",
                 models[1], "--data", str(data), "--limit", "1", "--refusal", "detector",
                 "--greedy", "--bootstrap", "0", "--output", str(tmp_path / "run"), "--quiet",
                 "--no-store"]) == 0
    assert [(b.identity["model"], b.closed) for b in built] == [(models[0], 1), (models[1], 1)]


def test_a_run_that_fails_in_the_task_still_closes_its_model(shared, models, built, tmp_path,
                                                               monkeypatch):
    from localeval.tasks.mcq import MCQTask

    def score(self, planned, answer):
        raise ValueError("scoring broke")
    monkeypatch.setattr(MCQTask, "score", score)
    with pytest.raises(ValueError, match="scoring broke"):
        main(_cmmlu(shared, models[0], tmp_path))
    assert [b.closed for b in built] == [1]


def test_a_backend_that_raises_is_closed_and_its_error_kept(shared, models, built, tmp_path):
    with pytest.raises(RuntimeError, match="the engine died"):
        main(_cmmlu(shared, models[2], tmp_path))
    assert [b.closed for b in built] == [1]


def test_a_failed_close_is_a_warning_and_the_run_finished(shared, models, built, tmp_path,
                                                          monkeypatch, capsys):
    def close(self):
        raise OSError("engine process already gone")
    monkeypatch.setattr(Counting, "close", close)
    assert main(_cmmlu(shared, models[0], tmp_path)) == 0
    err = capsys.readouterr().err
    assert "warning: closing the counting backend failed: OSError: engine process already " \
        "gone" in err


def test_the_callers_own_backend_stays_open(shared, built, tmp_path):
    own = Counting("own")
    for name in ("a", "b"):  # one engine for several runs, as a notebook keeps one
        evaluate(task="cmmlu", model=own, data=str(shared / "data" / "cmmlu"),
                 subjects=["arts"], limit=2, output=tmp_path / name, quiet=True, store=False)
    assert own.closed == 0 and built == []
