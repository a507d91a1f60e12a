"""The one run lifecycle: the typed run record and its status, the task table, and a guard that
implements only the small interface. No model is built: a deterministic stand-in backend."""

from __future__ import annotations

import json
import zlib

import pytest

from localeval import RunRecord, evaluate, load_results
from localeval.backends.base import NextLogprobs, ScoreNext
from localeval.demo.mcq import SAMPLE_MCQ
from localeval.errors import LocalevalError
from localeval.guards import Conversation, Guard, GuardVerdict
from localeval.store.runs import write_config


class HashBackend:
    """Log-probs from a checksum of (prompt, candidate): arbitrary, deterministic, no model."""

    identity = {"backend": "hash", "model": "hash"}

    def __init__(self, fail: BaseException | None = None):
        self.fail, self.calls = fail, 0

    def run(self, requests, progress=None):
        self.calls += 1
        if self.fail:
            raise self.fail
        return [NextLogprobs(logprobs={c: -(zlib.crc32(f"{r.prompt}|{c}".encode()) % 1000) / 100
                                       for c in r.candidates}) for r in requests
                if isinstance(r, ScoreNext)]


def _mcq(tmp_path, backend, **kw):
    return evaluate(task="tmlu", model=backend, data=str(SAMPLE_MCQ), output=tmp_path / "run",
                    cache=tmp_path / "cache.sqlite", quiet=True, **kw)


def test_finished_run_record_round_trips(tmp_path):
    record = _mcq(tmp_path, HashBackend())
    assert isinstance(record, RunRecord) and record.status == "finished"
    assert record.results["n_samples"] == len(record.samples) == 15
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["run"]["status"] == "finished" and config["run"]["schema"] == 1
    assert config["run"]["started_at"] <= config["run"]["finished_at"]
    loaded = load_results(tmp_path / "run")
    assert loaded.status == "finished" and loaded.folder == tmp_path / "run"
    assert loaded.results == record.results and loaded.samples == record.samples
    assert "run" not in loaded.config and loaded.config["task"] == "tmlu"


def test_failed_run_is_marked_and_keeps_no_results(tmp_path):
    with pytest.raises(RuntimeError, match="GPU fell off"):
        _mcq(tmp_path, HashBackend(fail=RuntimeError("GPU fell off")))
    record = load_results(tmp_path / "run")
    assert record.status == "failed" and record.error == "RuntimeError: GPU fell off"
    assert record.results is None and record.samples == []
    assert not (tmp_path / "run" / "results.json").exists()


def test_interrupted_run_says_so(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        _mcq(tmp_path, HashBackend(fail=KeyboardInterrupt()))
    assert load_results(tmp_path / "run").error == "interrupted"


def test_killed_and_old_folders_load(tmp_path):
    killed = RunRecord({"task": "tmlu"}, folder=tmp_path / "killed", started_at="t0")
    write_config(killed)  # what a run leaves when it is killed before the end
    record = load_results(tmp_path / "killed")
    assert record.status == "running" and record.results is None
    old = tmp_path / "old"  # written before config.json had a "run" block
    old.mkdir()
    (old / "config.json").write_text(json.dumps({"task": "tmlu"}))
    (old / "results.json").write_text(json.dumps({
        "schema": "localeval.mcq/1", "task": "tmlu", "n_samples": 1, "method": "likelihood",
        "shots": 0, "metrics": {"micro": {"n": 1, "acc": 1.0}}}))
    (old / "samples.jsonl").write_text('{"id": "1"}\n')
    record = load_results(old)
    assert record.status == "finished" and record.samples == [{"id": "1"}]
    with pytest.raises(LocalevalError, match="is not a run folder"):
        load_results(tmp_path / "nowhere")


def test_task_table_checks_names_and_options(tmp_path):
    with pytest.raises(LocalevalError, match="unknown task 'nope'.*sea-safeguard"):
        evaluate(task="nope", model=HashBackend())
    with pytest.raises(LocalevalError, match="task 'tmlu' has no option.*guard"):
        evaluate(task="tmlu", model=HashBackend(), data=str(SAMPLE_MCQ), guard="llamaguard3")
    with pytest.raises(LocalevalError, match="has no option.*shots"):
        evaluate(task="safety-prompts", model=HashBackend(), shots=3)


class KeywordGuard(Guard):
    """The small interface alone: conversations in, P(harmful) out, no requests at all."""

    name = "keyword"
    template_source = "a test"

    def classify(self, conversations, execute):
        assert all(isinstance(c, Conversation) for c in conversations)
        return [GuardVerdict(0.9 if "kill" in c.prompt.lower() else 0.1) for c in conversations]


def test_a_guard_with_only_the_small_interface(shared, tmp_path):
    backend = HashBackend()
    record = evaluate(task="safety-prompts", model=backend, guard=KeywordGuard(),
                      data=shared / "data" / "xstest" / "xstest_prompts.csv", limit=20,
                      n_resamples=0, quiet=True, output=tmp_path / "run")
    assert backend.calls == 0 and record.results["guard"] == "keyword"
    (row,) = record.results["per_language"]
    assert row["n"] == 20 and record.results["n_failed"] == 0
    assert {s["score"] for s in record.samples} <= {0.1, 0.9}
    assert json.loads((tmp_path / "run" / "config.json").read_text())["guard"]["name"] == "keyword"
    with pytest.raises(LocalevalError, match="guard_options are for a guard given by name"):
        evaluate(task="safety-prompts", model=backend, guard=KeywordGuard(),
                 guard_options={"style": "yes-no"}, data="x")
