"""SIGTERM (docker stop, Slurm, Kubernetes, timeout) and SIGHUP are handled as Ctrl-C is: every
finished response is committed to the cache, the run is recorded as failed ("interrupted"),
one line says so, and the same command resumes (issue 33 item 3)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from child_signals import default_stop_signals

from localeval.cli import main, stop_signals_interrupt

# The real command, with each response counted as it reaches the cache writer (finished, not
# yet committed: the commit interval is an hour, so only every 64th response commits).
COUNTED = ("import os, sys; from localeval.store import executor; add = executor.CacheWriter.add\n"
           "def counted(self, request, response):\n"
           "    add(self, request, response)\n"
           "    with open(os.environ['FINISHED'], 'a') as f: f.write('1\\n')\n"
           "executor.CacheWriter.add = counted\n"
           "from localeval.cli import main; sys.exit(main(sys.argv[1:]))")


def _finished(path) -> int:
    try:
        return len(path.read_text().splitlines())
    except OSError:
        return 0


def _rows(path) -> int:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]


def _stop_at(argv, env, finished_file, rows: int, signum: int):
    """Run the command, send ``signum`` once ``rows`` responses have finished."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, preexec_fn=default_stop_signals)
    deadline = time.monotonic() + 240
    while _finished(finished_file) < rows and proc.poll() is None and \
            time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signum)
    _, err = proc.communicate()
    return proc.returncode, err


def _command(shared, model, out) -> list[str]:
    """The run the tests stop: its arguments after ``run`` are the command's own."""
    return ["run", "--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"), "--subjects",
            "agronomy,anatomy", "--limit", "64", "--model", f"hf:{model}", "--batch-size", "1",
            "--no-prefix-reuse", "--output", str(out), "--quiet"]


@pytest.fixture(scope="module")
def clean_samples(shared, tiny_llama, tmp_path_factory) -> bytes:
    """samples.jsonl of the same command run uninterrupted, once for the tests that resume:
    their commands differ only in --output, which samples.jsonl does not hold. Run here
    through main (a process of its own would import torch again; nothing is stopped)."""
    out = tmp_path_factory.mktemp("stop-signals-clean") / "clean"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LOCALEVAL_CACHE_COMMIT_SECONDS", "3600")
        assert main(_command(shared, tiny_llama, out)) == 0
    return (out / "samples.jsonl").read_bytes()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_stop_signal_keeps_every_finished_response_and_resumes(name, shared, tmp_path,
                                                                 tiny_llama, request,
                                                                 monkeypatch):
    signum = getattr(signal, name)
    out, finished = tmp_path / "run", tmp_path / "finished"
    env = {**os.environ, "FINISHED": str(finished), "LOCALEVAL_CACHE_COMMIT_SECONDS": "3600"}
    argv = [sys.executable, "-c", COUNTED, *_command(shared, tiny_llama, out)]
    code, err = _stop_at(argv, env, finished, 70, signum)
    # Before: SIGTERM exited -15 with no line, the run stayed "running", and the cache held 64
    # of the 70 finished responses (the last commit); SIGINT kept all 70.
    assert code == 128 + signum, err
    lines = [line for line in err.splitlines() if line.startswith(("interrupted", "error"))]
    assert lines == [f"interrupted{'' if name == 'SIGINT' else f' ({name})'}; finished "
                     "requests are in the cache, rerun the command to resume"], err
    run = json.loads((out / "config.json").read_text())["run"]
    assert run["status"] == "failed" and run["error"] == "interrupted"
    kept = _rows(out / "cache.sqlite")
    assert kept == _finished(finished) >= 70  # every finished response, none lost
    if name == "SIGINT":
        return
    # The same command resumes; here, through main (what is tested is the run folder the
    # stopped process left, not a second process: that would import torch again).
    monkeypatch.setenv("LOCALEVAL_CACHE_COMMIT_SECONDS", "3600")
    assert main(argv[3:]) == 0
    timing = json.loads((out / "results.json").read_text())["timing"]
    assert (timing["requests_cached"], timing["requests_run"]) == (kept, 128 - kept)
    assert (out / "samples.jsonl").read_bytes() == request.getfixturevalue("clean_samples")


def test_an_ignored_hangup_stays_ignored():
    """``nohup localeval run …`` sets SIGHUP to be ignored: the run must not stop on it."""
    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with stop_signals_interrupt():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN)
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGHUP, before)


def test_a_stopped_show_offers_nothing_to_resume(tmp_path):
    """Issue 48 item 10: before, SIGTERM during ``show`` said "finished requests are in the
    cache, rerun the command to resume": show has no requests, nothing to resume."""
    slow = ("import sys, time; import localeval.api as api\n"
            "def slow(folder):\n"
            "    print('reading', file=sys.stderr, flush=True); time.sleep(60)\n"
            "api.load_results = slow\n"
            "from localeval.cli import main; sys.exit(main(sys.argv[1:]))")
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    child = subprocess.Popen([sys.executable, "-c", slow, "show", str(tmp_path)], env=env,
                             stderr=subprocess.PIPE, text=True, preexec_fn=default_stop_signals)
    try:
        assert child.stderr.readline() == "reading\n"
        child.send_signal(signal.SIGTERM)
        _, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 128 + signal.SIGTERM and err == "interrupted (SIGTERM)\n", err
