"""The results store: every finished run's record and headline metrics in one database, for the
leaderboard (``localeval leaderboard``) and for finding runs again.

Where: ``--store PATH``, else ``$LOCALEVAL_STORE``, else ``$XDG_DATA_HOME/localeval/
results.sqlite`` (``~/.local/share`` when XDG_DATA_HOME is unset). SQLite in WAL mode with a
busy timeout, each run written in one transaction, so runs finishing at the same moment in two
processes are both recorded, whole, with no "database is locked".

The schema is plain SQL (TEXT, INTEGER, DOUBLE PRECISION, primary and foreign keys) and the
statements use only what PostgreSQL also runs (the SQLite PRAGMAs are issued at connect and
are the only SQLite-specific lines), so a server database can replace the file later. A run
rerun in the same folder replaces its earlier record (its id is its folder's path).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import uuid
from pathlib import Path
from typing import Any

from .runs import RunRecord

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, task TEXT NOT NULL, "
    "results_schema TEXT NOT NULL, model TEXT, folder TEXT, started_at TEXT, finished_at TEXT, "
    "localeval_version TEXT, config TEXT NOT NULL, results TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS metrics (run_id TEXT NOT NULL REFERENCES runs (run_id), "
    "name TEXT NOT NULL, value DOUBLE PRECISION, n INTEGER, PRIMARY KEY (run_id, name))",
    "CREATE INDEX IF NOT EXISTS runs_by_task ON runs (task)",
)
BUSY_TIMEOUT_S = 60.0


def store_path(explicit: str | Path | None = None) -> Path:
    if explicit:
        return Path(explicit)
    if os.environ.get("LOCALEVAL_STORE"):
        return Path(os.environ["LOCALEVAL_STORE"])
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "localeval" / "results.sqlite"


def connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
    for statement in SCHEMA:
        db.execute(statement)
    return db


Metric = tuple[str, "float | None", "int | None"]  # (name, value, n)


def _safety_metrics(results: dict) -> list[Metric]:
    out = [(f"auprc/{r['kind']}/{r['context']}/{r['subset']}", r.get("auprc"), r.get("n"))
           for r in results.get("overall") or []]
    for row in (results.get("table2") or {}).get("rows", []):
        out += [(f"table2/{col}", value, None) for col, value in row["values"].items()]
    return out


def _llm_safety_metrics(results: dict) -> list[Metric]:
    overall = results.get("overall") or {}
    return [(name, overall[name]["rate"], overall[name]["n"]) for name in
            ("harmful_response_rate", "refusal_rate_harmful", "refusal_rate_safe")
            if name in overall]


def _contamination_metrics(results: dict) -> list[Metric]:
    return [(f"{score}/{source}/{k}/median", ((v.get(score) or {}).get(k) or {}).get("median"),
             v.get("n")) for source, v in results.get("sources", {}).items()
            for score in ("min_k", "min_k_pp") for k in results.get("k", [])]


def _mcq_metrics(results: dict) -> list[Metric]:
    m = results.get("metrics") or {}
    micro = m.get("micro") or {}
    out = [("accuracy", m.get("discipline_average", micro.get("acc")), micro.get("n")),
           ("micro", micro.get("acc"), micro.get("n")),
           ("macro", (m.get("macro") or {}).get("acc"), None)]
    return out + [(f"subject/{s}", r.get("acc"), r.get("n"))
                  for s, r in (m.get("by_subject") or {}).items()]


METRICS = {"localeval.safety/": _safety_metrics, "localeval.llm-safety/": _llm_safety_metrics,
           "localeval.contamination/": _contamination_metrics}


def headline_metrics(results: dict) -> list[Metric]:
    """(name, value, n) of the numbers a leaderboard ranks by, per results schema."""
    schema = str(results.get("schema", ""))
    for prefix, metrics in METRICS.items():
        if schema.startswith(prefix):
            return metrics(results)
    return _mcq_metrics(results)


def _run_id(record: RunRecord) -> str:
    if record.folder:
        return hashlib.sha256(str(Path(record.folder).resolve()).encode()).hexdigest()[:16]
    return uuid.uuid4().hex[:16]


def record_run(record: RunRecord, path: str | Path | None = None) -> str:
    """Write one finished run (replacing an earlier record of its folder); its id."""
    run_id = _run_id(record)
    config = record.config
    row = (run_id, str(config.get("task") or record.results.get("task") or ""),
           str(record.results.get("schema", "")), config.get("model") or
           str((config.get("backend") or {}).get("model", "")),
           str(Path(record.folder).resolve()) if record.folder else None, record.started_at,
           record.finished_at, config.get("localeval_version"),
           json.dumps(config, ensure_ascii=False, default=str),
           json.dumps(record.results, ensure_ascii=False, default=str))
    metrics = [(run_id, name, value, n) for name, value, n in headline_metrics(record.results)]
    db = connect(store_path(path))
    try:
        db.execute("BEGIN IMMEDIATE")  # take the write lock first: no upgrade deadlock
        db.execute("DELETE FROM metrics WHERE run_id = ?", (run_id,))
        db.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
        db.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
        db.executemany("INSERT INTO metrics VALUES (?, ?, ?, ?)", metrics)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    finally:
        db.close()
    return run_id


def task_runs(task: str, path: str | Path | None = None) -> list[dict[str, Any]]:
    """Every recorded run of ``task``: its columns and its metrics by name."""
    db = connect(store_path(path))
    try:
        runs = db.execute("SELECT run_id, model, folder, finished_at, results_schema FROM runs "
                          "WHERE task = ? ORDER BY finished_at", (task,)).fetchall()
        out = []
        for run_id, model, folder, finished, schema in runs:
            metrics = {name: value for name, value in db.execute(
                "SELECT name, value FROM metrics WHERE run_id = ?", (run_id,))}
            out.append({"run_id": run_id, "model": model, "folder": folder,
                        "finished_at": finished, "schema": schema, "metrics": metrics})
        return out
    finally:
        db.close()
