"""A disk that fills up while the cache is written is one line and exit 2 (issue 33 item 4);
before, an HTTP run printed a traceback per request in flight ("unhandled exception during
asyncio.run() shutdown", ~200 lines) and exited 1. What was committed before stays, and the
same command resumes from it."""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import subprocess
import sys

import pytest
from offline_runs import Writes

from localeval import evaluate, load_run_state
from localeval.demo.mcq import SAMPLE_MCQ

LIMIT = 96 * 1024  # bytes any one file of the run may reach: the cache outgrows it mid-run


def _full_disk():
    # A file-size limit fails a write past it with EFBIG, as a full disk fails it with ENOSPC
    # (a tmpfs filled up gives the same one line); Python ignores the SIGXFSZ it sends.
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


@pytest.mark.slow
def test_a_full_disk_under_the_cache_of_an_http_run_is_one_line(tiny_llama, shared, tmp_path):
    from openai_server import ModelServer

    server = ModelServer(tiny_llama, name="tiny")
    out = tmp_path / "run"
    argv = [sys.executable, "-m", "localeval.cli", "run", "--task", "cmmlu", "--data",
            str(shared / "data" / "cmmlu"), "--subjects", "agronomy,anatomy", "--limit", "80",
            "--model", "openai:tiny", "--base-url", server.url, "--method", "generation",
            "--max-tokens", "4", "--output", str(out), "--no-store", "--quiet"]
    env = {**os.environ, "LOCALEVAL_CACHE_COMMIT_SECONDS": "0"}  # the cache grows at once
    try:
        full = subprocess.run(argv, env=env, capture_output=True, text=True,
                              preexec_fn=_full_disk)
        assert full.returncode == 2, full.stderr[-3000:]
        lines = full.stderr.strip().splitlines()
        assert len(lines) == 1, full.stderr[-3000:]
        # SQLite says "disk I/O error" for EFBIG, "database or disk is full" for ENOSPC
        assert lines[0].startswith(f"error: cannot write the request cache {out}/cache.sqlite: "
                                   ), lines
        run = json.loads((out / "config.json").read_text())["run"]
        assert run["status"] == "failed" and run["error"].startswith("CacheError")
        with sqlite3.connect(out / "cache.sqlite") as db:
            kept = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        assert 0 < kept < 160
        room = subprocess.run(argv, env=env, capture_output=True, text=True)
    finally:
        server.stop()
    assert room.returncode == 0, room.stderr
    timing = json.loads((out / "results.json").read_text())["timing"]
    assert timing["requests_cached"] == kept and timing["requests_run"] == 160 - kept


def test_a_run_is_finished_only_when_every_file_is_written(tmp_path, monkeypatch):
    """A full disk while the report is written: the folder says failed, not finished, and no
    temporary file is left; the next attempt finishes it from the cache."""
    import localeval.report.html

    real = localeval.report.html.render

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(localeval.report.html, "render", full_disk)
    options = dict(task="tmlu", model=Writes(), data=str(SAMPLE_MCQ), method="generation",
                   output=tmp_path / "run", quiet=True, store=False, report=True)
    with pytest.raises(OSError, match="No space"):
        evaluate(**options)
    state = load_run_state(tmp_path / "run")
    assert state.lifecycle.status == "failed"
    assert "No space left on device" in str(state.lifecycle.error)
    assert not list((tmp_path / "run").glob("*.tmp"))
    monkeypatch.setattr(localeval.report.html, "render", real)
    again = evaluate(**options)
    assert again.status == "finished" and (tmp_path / "run" / "report.html").exists()
    assert json.loads((tmp_path / "run" / "config.json").read_text())["run"]["status"] == \
        "finished"
