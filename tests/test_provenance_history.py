"""A rerun in a run folder keeps the provenance of the run that made it (its command line and
timing) and adds itself to results.json's ``history``. No model: a stand-in backend."""

from __future__ import annotations

import json
import zlib

from localeval import evaluate, load_results
from localeval.backends.base import NextLogprobs, ScoreNext
from localeval.demo.mcq import SAMPLE_MCQ


class SlowFirstBackend:
    """Deterministic log-probs; the first instance also reports a long run in its stats, so the
    first timing is told apart from a rerun's without timing anything."""

    identity = {"backend": "stand-in", "model": "stand-in"}

    def __init__(self):
        self.stats = {"forwarded_tokens": 0}

    def run(self, requests, progress=None):
        self.stats["forwarded_tokens"] += 1000 * len(requests)
        return [NextLogprobs(logprobs={c: -(zlib.crc32(f"{r.prompt}|{c}".encode()) % 1000) / 100
                                       for c in r.candidates})
                for r in requests if isinstance(r, ScoreNext)]


def _run(tmp_path, command, **kw):
    return evaluate(task="tmlu", model=SlowFirstBackend(), data=str(SAMPLE_MCQ),
                    output=tmp_path / "run", cache=tmp_path / "cache.sqlite", quiet=True,
                    store=False, command=command, **kw)


def _files(tmp_path):
    folder = tmp_path / "run"
    return (json.loads((folder / "config.json").read_text()),
            json.loads((folder / "results.json").read_text()))


def test_a_cached_rerun_keeps_the_first_runs_timing_and_command(tmp_path):
    first_command = ["localeval", "run", "--task", "tmlu", "--output", "run"]
    _run(tmp_path, first_command)
    config, results = _files(tmp_path)
    first_timing = results["timing"]
    assert first_timing["requests_run"] == 15 and first_timing["forwarded_tokens"] == 15000
    assert config["command"] == first_command and results["history"] == []

    rerun_command = ["localeval", "run", "--task", "tmlu", "--output", "run", "--quiet"]
    _run(tmp_path, rerun_command)
    config, results = _files(tmp_path)
    assert config["command"] == first_command  # the command that made the numbers
    assert results["timing"] == first_timing
    (entry,) = results["history"]
    assert entry["command"] == rerun_command
    assert entry["requests_cached"] == 15 and entry["requests_run"] == 0
    assert isinstance(entry["seconds"], float) and entry["started"][:2] == "20"
    assert set(entry) == {"started", "command", "requests_run", "requests_cached", "seconds"}

    _run(tmp_path, [*rerun_command, "--again"])  # each later invocation is one more entry
    record = load_results(tmp_path / "run")
    assert [h["command"][-1] for h in record.results["history"]] == ["--quiet", "--again"]
    assert record.results["timing"] == first_timing


def test_overwrite_starts_a_new_provenance(tmp_path):
    _run(tmp_path, ["first"])
    _run(tmp_path, ["second"], overwrite=True)
    config, results = _files(tmp_path)
    assert config["command"] == ["second"] and results["history"] == []
