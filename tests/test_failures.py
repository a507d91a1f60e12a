"""Failures are never final and never silent; a killed run resumes without recomputing what
finished."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

import localeval.run
from localeval import evaluate
from localeval.backends.base import Backend, Failed, NextLogprobs, ScoreNext
from localeval.backends.failures import Unclassified
from localeval.cli import main


class Flaky(Backend):
    """Answers A for every question, except that requests whose number ``% every == 0`` fail
    (as a server error would); reports each response as it finishes."""

    def __init__(self, every: int = 3):
        self.every, self.calls = every, 0
        self.identity = {"backend": "flaky", "model": "flaky"}

    def max_context(self):
        return None

    def count_tokens(self, prompt):
        return 0

    def run(self, requests, progress=None):
        out = []
        for i, r in enumerate(requests):
            self.calls += 1
            assert isinstance(r, ScoreNext)
            if self.every and self.calls % self.every == 0:
                resp = Failed(Unclassified("HTTP 503 from the server"))
            else:
                resp = NextLogprobs(logprobs={c: (0.0 if k == 0 else -5.0)
                                              for k, c in enumerate(r.candidates)})
            out.append(resp)
            if progress:
                progress(i, resp)
        return out


def test_failed_requests_are_left_out_counted_and_retried(shared, tmp_path):
    options = dict(task="cmmlu", data=shared / "data" / "cmmlu", subjects=["agronomy"], limit=9,
                   quiet=True, cache=tmp_path / "c.sqlite")
    first = evaluate(model=Flaky(every=3), **options)
    failed = [s for s in first.samples if s.get("failed")]
    assert len(failed) == 3 and all(s["correct"] is None and s["pred"] is None for s in failed)
    assert all(s["error"].startswith("HTTP 503") for s in failed)
    micro = first.results["metrics"]["micro"]
    assert micro["n"] == 6 and micro["n_failed"] == 3  # never counted as wrong answers
    ok = [s for s in first.samples if not s.get("failed")]
    assert micro["correct"] == sum(s["gold"] == "A" for s in ok)
    assert first.results["n_failed"] == 3 and first.results["failed"] == [s["id"] for s in failed]
    # The next run of the same command retries only the failures (they were never cached).
    healthy = Flaky(every=0)
    again = evaluate(model=healthy, **options)
    assert healthy.calls == 3 and again.results["n_failed"] == 0
    assert again.results["metrics"]["micro"]["n"] == 9


def test_exit_status_with_failures(shared, tmp_path, monkeypatch, capsys, model_folder):
    monkeypatch.setattr(localeval.run, "load_backend", lambda spec, **kw: Flaky(every=3))
    argv = ["run", "--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"), "--subjects",
            "agronomy", "--limit", "9", "--model", model_folder, "--quiet", "--no-cache"]
    assert main([*argv, "--output", str(tmp_path / "a")]) == 3
    err = capsys.readouterr().err
    assert "3 of 9 samples failed (over --max-failed 0)" in err and "rerun" in err
    assert main([*argv, "--output", str(tmp_path / "b"), "--max-failed", "0.5"]) == 0


def test_each_response_reaches_the_cache_as_it_finishes(tmp_path):
    """A backend interrupted halfway: everything it reported before is in the cache."""
    from localeval.run import CachedExecutor
    from localeval.store.cache import RequestCache

    class Interrupted(Flaky):
        def run(self, requests, progress=None):
            for i, r in enumerate(requests):
                if i == 5:
                    raise KeyboardInterrupt
                progress(i, NextLogprobs(logprobs={c: 0.0 for c in r.candidates}))

    requests = [ScoreNext(f"q{i}", ("A", "B")) for i in range(10)]
    with RequestCache(tmp_path / "c.sqlite") as cache, pytest.raises(KeyboardInterrupt):
        CachedExecutor(Interrupted(), cache, True, "requests")(requests)
    with RequestCache(tmp_path / "c.sqlite") as cache:
        got = cache.get_many({"backend": "flaky", "model": "flaky"}, requests)
    assert [r is not None for r in got] == [True] * 5 + [False] * 5


def _rows(path) -> int:
    try:
        with sqlite3.connect(path, timeout=5) as db:
            return db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    except sqlite3.Error:
        return 0


def _kill_when(argv: list[str], cache, rows: int, commit_seconds: str | None = None) -> int:
    """Start the command, SIGKILL it once its cache holds ``rows`` responses; the rows kept.
    ``commit_seconds``: LOCALEVAL_CACHE_COMMIT_SECONDS for the run (default: the default)."""
    env = dict(os.environ)
    if commit_seconds is not None:
        env["LOCALEVAL_CACHE_COMMIT_SECONDS"] = commit_seconds
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env)
    deadline = time.monotonic() + 240
    while _rows(cache) < rows and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return _rows(cache)


def _resume_equals_clean(argv: list[str], out, clean, total: int, kills: list) -> None:
    """Kill the run at each point (rows, or (rows, commit seconds)) in turn, resume it; it must
    end as an uninterrupted run: nothing lost or duplicated, nothing finished recomputed, no
    file left truncated."""
    kept = 0
    for point in kills:
        rows, commit = point if isinstance(point, tuple) else (point, None)
        kept = _kill_when(argv, out / "cache.sqlite", rows, commit)
        assert rows <= kept < total, (rows, kept)  # killed mid-run, finished requests stored
        assert json.loads((out / "config.json").read_text())["run"]["status"] == "running"
    done = subprocess.run(argv, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    results = json.loads((out / "results.json").read_text())
    assert results["timing"]["requests_run"] == total - kept  # nothing finished is recomputed
    assert results["timing"]["requests_cached"] == kept
    assert _rows(out / "cache.sqlite") == total
    uninterrupted = subprocess.run([*argv[:-3], "--output", str(clean), "--quiet"],
                                   capture_output=True, text=True)
    assert uninterrupted.returncode == 0, uninterrupted.stderr
    assert (out / "samples.jsonl").read_bytes() == (clean / "samples.jsonl").read_bytes()
    clean_results = json.loads((clean / "results.json").read_text())
    # timing and usage count what each invocation ran and read from the cache
    per_invocation = ("timing", "usage")
    assert {k: v for k, v in results.items() if k not in per_invocation} == \
        {k: v for k, v in clean_results.items() if k not in per_invocation}
    assert results["usage"]["model"]["prompt_tokens"] == \
        clean_results["usage"]["model"]["prompt_tokens"]  # the answers' own counts: the same


def _cli(*args) -> list[str]:
    return [sys.executable, "-m", "localeval.cli", "run", *args]


@pytest.mark.slow
def test_sigkill_a_likelihood_run_then_resume(shared, tmp_path, tiny_llama):
    out = tmp_path / "run"
    argv = _cli("--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"), "--subjects",
                "agronomy,anatomy", "--limit", "60", "--model", f"hf:{tiny_llama}",
                "--batch-size", "1", "--no-prefix-reuse", "--output", str(out), "--quiet")
    # The first kill with the default commit interval (1 s); the second with every response
    # committed at once, so the kill surely lands before the end.
    _resume_equals_clean(argv, out, tmp_path / "clean", 120, kills=[10, (60, "0")])


@pytest.mark.slow
def test_sigkill_a_generation_run_then_resume(shared, tmp_path, tiny_llama, monkeypatch):
    monkeypatch.setenv("LOCALEVAL_CACHE_COMMIT_SECONDS", "0")  # the kill points are row counts
    out = tmp_path / "run"
    argv = _cli("--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"), "--subjects",
                "agronomy", "--limit", "30", "--model", f"hf:{tiny_llama}", "--method",
                "generation", "--max-tokens", "24", "--output", str(out), "--quiet")
    _resume_equals_clean(argv, out, tmp_path / "clean", 30, kills=[5, 18])


# WildGuard reads its verdict after lines the model writes itself; a random model's lines never
# have WildGuard's format, so this run accepts any, to reach the scoring stage.
ANY_LINES = ("import re, sys; from localeval.guards.wildguard import WildGuard; "
             "WildGuard.stage0_pattern = re.compile('(?s).*'); "
             "from localeval.cli import main; sys.exit(main(sys.argv[1:]))")


@pytest.mark.slow
def test_sigkill_a_two_stage_guard_run_in_each_stage_then_resume(shared, tmp_path, tiny_llama,
                                                                  monkeypatch):
    # Each response committed as it finishes, so the kill can land inside the short stage 1.
    monkeypatch.setenv("LOCALEVAL_CACHE_COMMIT_SECONDS", "0")
    out = tmp_path / "run"
    argv = [sys.executable, "-c", ANY_LINES, "run", "--task", "safety-responses", "--data",
            str(shared / "data" / "xstest" / "model_completions"), "--limit", "4",
            "--classify", "response-with-prompt", "--guard", "wildguard", "--guard-option",
            "label_scores=full", "--model",
            f"hf:{tiny_llama}", "--batch-size", "1", "--no-prefix-reuse", "--output", str(out),
            "--quiet"]
    # 20 items: 20 generations (stage 0), then 20 scores (stage 1); killed in each stage.
    _resume_equals_clean(argv, out, tmp_path / "clean", 40, kills=[6, 23])


def test_a_second_live_run_in_the_same_folder_is_refused(shared, tmp_path, monkeypatch, capsys,
                                                         model_folder):
    from localeval.store.runs import run_folder_lock

    monkeypatch.setattr(localeval.run, "load_backend", lambda spec, **kw: Flaky(every=0))
    argv = ["run", "--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"), "--subjects",
            "agronomy", "--limit", "3", "--model", model_folder, "--quiet", "--output",
            str(tmp_path / "run")]
    with run_folder_lock(tmp_path / "run"):  # as a live run in another process holds it
        assert main(argv) == 2
    err = capsys.readouterr().err
    assert "is in use by another localeval run" in err and len(err.strip().splitlines()) == 1
    assert main(argv) == 0  # the lock goes with its holder
