"""The results store: every finished run's record and headline metrics in one database, for the
leaderboard (``localeval leaderboard``) and for finding runs again.

Where: ``--store PATH|URL``, else ``$LOCALEVAL_STORE``, else ``$XDG_DATA_HOME/localeval/
results.sqlite`` (``~/.local/share`` when XDG_DATA_HOME is unset). A path is a SQLite file (WAL
mode, a busy timeout); a ``postgresql://`` URL is a team's PostgreSQL server. Each run is
written in one transaction, so runs finishing at the same moment in several processes are all
recorded, whole, and a store that fails mid-write keeps the run's earlier record or none.

One schema and one code path for both engines: plain SQL (TEXT, INTEGER, DOUBLE PRECISION,
primary and foreign keys); what differs (parameter markers, how a write transaction locks) is
in :mod:`localeval.store.database`. A run rerun in the same folder replaces its earlier record
(its id is its folder's path).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import uuid
from pathlib import Path
from typing import Any

from .database import StoreError, is_url, opened, shown
from .runs import RunRecord

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, task TEXT NOT NULL, "
    "results_schema TEXT NOT NULL, model TEXT, folder TEXT, started_at TEXT, finished_at TEXT, "
    "localeval_version TEXT, config TEXT NOT NULL, results TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS metrics (run_id TEXT NOT NULL REFERENCES runs (run_id), "
    "name TEXT NOT NULL, value DOUBLE PRECISION, n INTEGER, PRIMARY KEY (run_id, name))",
    "CREATE INDEX IF NOT EXISTS runs_by_task ON runs (task)",
)
# Added to every store (new ones too) by migration, in this order, after the SCHEMA's columns.
COLUMNS = (("runs", "data_files", "TEXT"),  # config.json's data fingerprint, as JSON
           ("runs", "host", "TEXT"))  # the machine the folder was recorded from
# A run's row, by name: a store migrated in another order (a column added, dropped, added
# again) holds them in another order, so no INSERT relies on their positions.
RUN_COLUMNS = ("run_id", "task", "results_schema", "model", "folder", "started_at",
               "finished_at", "localeval_version", "config", "results", "data_files", "host")


def store_path(explicit: str | Path | None = None) -> str | Path:
    """The store's target: a SQLite path, or a PostgreSQL URL (kept as text)."""
    target = explicit or os.environ.get("LOCALEVAL_STORE")
    if target:
        return str(target) if is_url(target) else Path(target)
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "localeval" / "results.sqlite"


def store_label(explicit: str | Path | None = None) -> str:
    """The store as it may be printed (a URL's password hidden)."""
    return shown(store_path(explicit))


def _run_id(record: RunRecord) -> str:
    return folder_id(record.folder) if record.folder else uuid.uuid4().hex[:16]


def folder_id(folder: str | Path) -> str:
    """The id of the run in ``folder``: the store's id for it, whether or not it is recorded."""
    return hashlib.sha256(str(Path(folder).resolve()).encode()).hexdigest()[:16]


Metric = tuple[str, "float | None", "int | None"]  # (name, value, n)


def record_run(record: RunRecord, metrics: list[Metric], path: str | Path | None = None) -> str:
    """Write one finished run with its headline ``metrics`` (the run lifecycle asks the run's
    view which), replacing an earlier record of its folder; its id."""
    run_id = _run_id(record)
    config = record.config.data()
    row = (run_id, str(config.get("task") or record.results.task or ""),
           record.results.schema_, config.get("model") or
           str((config.get("backend") or {}).get("model", "")),
           str(Path(record.folder).resolve()) if record.folder else None, record.started_at,
           record.finished_at, config.get("localeval_version"),
           json.dumps(config, ensure_ascii=False, default=str),
           json.dumps(record.results.data(), ensure_ascii=False, default=str),
           json.dumps(config["data_files"]) if config.get("data_files") else None,
           socket.gethostname())
    rows = [(run_id, name, value, n) for name, value, n in metrics]
    with opened(store_path(path), SCHEMA, COLUMNS) as db, db.writing(run_id):
        db.execute("DELETE FROM metrics WHERE run_id = ?", (run_id,))
        db.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
        db.execute(f"INSERT INTO runs ({', '.join(RUN_COLUMNS)}) VALUES "
                   f"({', '.join('?' * len(RUN_COLUMNS))})", row)
        db.executemany("INSERT INTO metrics VALUES (?, ?, ?, ?)", rows)
    return run_id


def task_runs(task: str, path: str | Path | None = None) -> list[dict[str, Any]]:
    """Every recorded run of ``task``: its columns, its config, the samples it scored, the
    host it was recorded from, and its metrics by name."""
    with opened(store_path(path), SCHEMA, COLUMNS) as db:
        runs = db.execute("SELECT run_id, model, folder, finished_at, config, results, host "
                          "FROM runs WHERE task = ? ORDER BY finished_at, model, run_id",
                          (task,)).fetchall()
        out = []
        for run_id, model, folder, finished, config, results, host in runs:
            metrics = {name: value for name, value in db.execute(
                "SELECT name, value FROM metrics WHERE run_id = ? ORDER BY name", (run_id,))}
            out.append({"run_id": run_id, "model": model, "folder": folder,
                        "finished_at": finished, "metrics": metrics, "host": host,
                        "config": _json_object(config),
                        "n_samples": _json_object(results).get("n_samples")})
        return out


def recorded_tasks(path: str | Path | None = None) -> list[str]:
    """The tasks the store holds runs of, by name."""
    with opened(store_path(path), SCHEMA, COLUMNS) as db:
        return [task for (task,) in db.execute("SELECT DISTINCT task FROM runs ORDER BY task")]


def recorded_runs(path: str | Path | None = None) -> list[dict[str, Any]]:
    """Every recorded run, as :func:`task_runs` gives them plus ``task``, ``results_schema``
    and ``started_at``; read on a connection that cannot write (``localeval view``), so the
    store is neither created nor migrated: a column an older store lacks is None."""
    with opened(store_path(path), SCHEMA, read_only=True) as db:
        cursor = db.execute("SELECT * FROM runs ORDER BY finished_at DESC, run_id")
        names = [d[0] for d in cursor.description]  # by name: a migrated store's order varies
        rows = [dict(zip(names, row)) for row in cursor.fetchall()]
        metrics: dict[str, dict[str, float | None]] = {}
        for run_id, name, value in db.execute("SELECT run_id, name, value FROM metrics "
                                              "ORDER BY run_id, name"):
            metrics.setdefault(run_id, {})[name] = value
    return [{"run_id": r["run_id"], "task": r["task"], "results_schema": r["results_schema"],
             "model": r["model"], "folder": r["folder"], "started_at": r["started_at"],
             "finished_at": r["finished_at"], "host": r.get("host"),
             "metrics": metrics.get(r["run_id"], {}), "config": _json_object(r["config"]),
             "n_samples": _json_object(r["results"]).get("n_samples")} for r in rows]


def _json_object(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def forget(refs: list[str], missing: bool = False, path: str | Path | None = None) -> list[str]:
    """Remove runs from the store: those whose id starts with, or whose folder is, one of
    ``refs``; with ``missing``, every run recorded from this machine whose folder is gone (a
    teammate's run on a shared store is never pruned from here). The folders are left alone.
    The ids removed."""
    here = socket.gethostname()
    with opened(store_path(path), SCHEMA, COLUMNS) as db:
        rows = db.execute("SELECT run_id, folder, host FROM runs").fetchall()
        chosen = [run_id for run_id, folder, host in rows
                  if any(run_id.startswith(r) or (folder and folder == str(Path(r).resolve()))
                         for r in refs)
                  or (missing and host == here and folder and not Path(folder).exists())]
        for run_id in chosen:
            with db.writing(run_id):
                db.execute("DELETE FROM metrics WHERE run_id = ?", (run_id,))
                db.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
    return chosen


def run_folder(ref: str, path: str | Path | None = None) -> str:
    """``ref`` as a run folder: itself when it is a path, else the folder the store recorded
    for the run whose id starts with ``ref`` (6 to 16 hex digits, as ``leaderboard --json``
    gives them), so ``show``, ``compare`` and ``report`` read a teammate's run by its id."""
    if Path(ref).exists() or not re.fullmatch(r"[0-9a-f]{6,16}", ref):
        return ref
    with opened(store_path(path), SCHEMA) as db:
        rows = db.execute("SELECT run_id, folder FROM runs WHERE run_id LIKE ?",
                          (ref + "%",)).fetchall()
    if len(rows) != 1:
        what = "several run ids start so" if rows else "no run folder and no run id"
        raise StoreError(f"{ref}: {what} in the results store {store_label(path)}")
    folder = rows[0][1]
    if not folder or not Path(folder).is_dir():
        raise StoreError(f"run {rows[0][0]} was recorded from {folder}, which is not on this "
                         "machine (the store keeps its numbers, the folder its samples)")
    return folder
