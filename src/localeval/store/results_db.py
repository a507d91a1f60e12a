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
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..records.mcq import SCHEMA as MCQ_SCHEMA
from ..records.mcq import has_average
from ..records.metric_names import MetricName
from ..tasks.run_spec import RunSpec
from .database import Database, StoreError, driver_errors, is_url, opened, shown
from .runs import RunRecord

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, task TEXT NOT NULL, "
    "results_schema TEXT NOT NULL, model TEXT, folder TEXT, started_at TEXT, finished_at TEXT, "
    "localeval_version TEXT, config TEXT NOT NULL, results TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS metrics (run_id TEXT NOT NULL REFERENCES runs (run_id), "
    "name TEXT NOT NULL, value DOUBLE PRECISION, n INTEGER, PRIMARY KEY (run_id, name))",
    "CREATE INDEX IF NOT EXISTS runs_by_task ON runs (task)",
    # One row per run, written with it (issue 53): what the viewer's lists and the leaderboard
    # read, so that neither parses a run's config and results JSON. ``protocol`` is the task
    # view's protocol facts as JSON, ``protocol_key`` their digest (with the data's path and
    # whether the data is matched by path), ``metric_names`` the run's metrics as JSON.
    "CREATE TABLE IF NOT EXISTS run_summary (run_id TEXT PRIMARY KEY REFERENCES runs (run_id), "
    "revision INTEGER NOT NULL, task TEXT NOT NULL, results_schema TEXT NOT NULL, model TEXT, "
    "guard TEXT, options TEXT, protocol TEXT NOT NULL, protocol_text TEXT NOT NULL, "
    "protocol_key TEXT NOT NULL, data TEXT, by_path INTEGER NOT NULL, "
    "metric_names TEXT NOT NULL, n_samples INTEGER, folder TEXT, started_at TEXT, "
    "finished_at TEXT, host TEXT)",
    "CREATE INDEX IF NOT EXISTS summary_by_time ON run_summary (finished_at, run_id)",
    "CREATE INDEX IF NOT EXISTS summary_by_task ON run_summary (task, protocol_key)",
    # the leaderboard's metric names in the store's order, and its check for values out of
    # range, each a seek instead of a pass over the task's runs
    "CREATE INDEX IF NOT EXISTS summary_by_names ON run_summary (task, metric_names, "
    "finished_at, model, run_id)",
    "CREATE INDEX IF NOT EXISTS metrics_by_value ON metrics (name, value)",
    "CREATE INDEX IF NOT EXISTS summary_by_revision ON run_summary (revision)",
    "CREATE INDEX IF NOT EXISTS summary_by_guard ON run_summary (guard)",
    "CREATE INDEX IF NOT EXISTS summary_in_order ON run_summary (task, finished_at, model, "
    "run_id)",
)
# The summary's revision: a store whose summaries were written under another one is summarised
# again by the next command that writes (its rows are derived, never the record). Raise it
# when what a summary holds changes (a view's ``protocol``, the guard or options columns).
# 2: multiple-choice metric names (issue 51 item 4: ``accuracy`` became ``average``).
# 3: protocol facts are every protocol-role option a config.json records (issue 61).
# 4: the run's name, guard and options columns are its RunSpec's (issue 61: one namer).
# 5: a guard's own options are a protocol fact ("guard options", issue 61).
SUMMARY_REVISION = 5
SUMMARY_COLUMNS = ("run_id", "revision", "task", "results_schema", "model", "guard", "options",
                   "protocol", "protocol_text", "protocol_key", "data", "by_path",
                   "metric_names", "n_samples", "folder", "started_at", "finished_at", "host",
                   "name")
UPGRADE = ("this store predates the run summary of this localeval (issue 53; issue 51's "
           "metric names), or a localeval from before it recorded or forgot runs there since, "
           "so every page reads every run; any command that writes upgrades it: "
           "`localeval leaderboard --task TASK --store STORE`")
# Added to every store (new ones too) by migration, in this order, after the SCHEMA's columns.
COLUMNS = (("runs", "data_files", "TEXT"),  # config.json's data fingerprint, as JSON
           ("runs", "host", "TEXT"),  # the machine the folder was recorded from
           ("run_summary", "name", "TEXT"))  # the run's name (its RunSpec's; issue 61)
# A run's row, by name: a store migrated in another order (a column added, dropped, added
# again) holds them in another order, so no INSERT relies on their positions.
RUN_COLUMNS = ("run_id", "task", "results_schema", "model", "folder", "started_at",
               "finished_at", "localeval_version", "config", "results", "data_files", "host")


# Issue 51 item 4: a multiple-choice run recorded before it stored the paper's Average (the
# mean of the discipline columns) as ``accuracy``, a name the report card gave the pooled
# ``micro``; a custom task's (one placeholder discipline, so its mean is micro) was micro
# under that name too. Now the Average is ``average``, and a custom task's run has none.
# Other kinds never wrote ``accuracy``; a metric of theirs so named is left alone.
OLD_AVERAGE, AVERAGE = "accuracy", "average"


def renamed_average(results: dict[str, Any]) -> str | None:
    """What a multiple-choice run's old ``accuracy`` metric is named now, from its results
    JSON: ``average`` when its task has discipline columns (``records.mcq.has_average``),
    else None (a copy of its ``micro``, dropped)."""
    return AVERAGE if has_average(results.get("disciplines")) else None


def current_names(run: dict[str, Any], metrics: dict[str, float | None]
                  ) -> dict[str, float | None]:
    """``metrics`` of a run read from a store not yet migrated (the viewer reads read-only)
    under today's names; ``run`` holds its ``results_schema`` and ``results`` JSON."""
    if run.get("results_schema") != MCQ_SCHEMA or OLD_AVERAGE not in metrics:
        return metrics
    out = {k: v for k, v in metrics.items() if k != OLD_AVERAGE}
    name = renamed_average(_json_object(run.get("results")))
    if name is not None:
        out.setdefault(name, metrics[OLD_AVERAGE])
    return out


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


Metric = tuple[MetricName, "float | None", "int | None"]  # (name, value, n); the name stored as text
# The protocol facts the leaderboard compares, of a run's (task, results schema, config), as its
# view gives them (``views.registry.protocol_facts``): handed in, since the views are a layer
# above the store.
ProtocolOf = Callable[[str, str, dict[str, Any]], dict[str, str]]


def record_run(record: RunRecord, metrics: list[Metric], path: str | Path | None = None, *,
               protocol_of: ProtocolOf) -> str:
    """Write one finished run with its headline ``metrics`` and its summary (its protocol
    facts by ``protocol_of``; the run lifecycle asks the run's view for both), replacing an
    earlier record of its folder; its id."""
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
    rows = [(run_id, str(name), value, n) for name, value, n in metrics]
    record_row: dict[str, Any] = dict(zip(RUN_COLUMNS, row))
    summary = summary_row(record_row, config, record.results.n_samples,
                          [str(name) for name, _, _ in metrics], protocol_of)
    with writable(path, protocol_of) as db, db.writing(run_id):
        db.execute("DELETE FROM run_summary WHERE run_id = ?", (run_id,))
        db.execute("DELETE FROM metrics WHERE run_id = ?", (run_id,))
        db.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
        db.execute(f"INSERT INTO runs ({', '.join(RUN_COLUMNS)}) VALUES "
                   f"({', '.join('?' * len(RUN_COLUMNS))})", row)
        db.executemany("INSERT INTO metrics VALUES (?, ?, ?, ?)", rows)
        _insert_summaries(db, [summary])
    return run_id


def summary_row(run: dict[str, Any], config: dict[str, Any], n_samples: int | None,
                metric_names: list[str], protocol_of: ProtocolOf) -> tuple[Any, ...]:
    """A run's summary, in SUMMARY_COLUMNS order, from its row in ``runs`` and its config."""
    facts = protocol_of(str(run["task"]), str(run["results_schema"]), config)
    by_path = data_by_path(config)
    data = None if config.get("data") is None else str(config.get("data"))
    text = json.dumps(facts, ensure_ascii=False)  # in the view's order: "differs" keeps it
    key = hashlib.sha256(json.dumps([text, data, by_path]).encode()).hexdigest()[:24]
    columns = RunSpec.columns_of(config, run["model"])  # its name, guard and options
    return (run["run_id"], SUMMARY_REVISION, run["task"], run["results_schema"], run["model"],
            columns["guard"], columns["options"], text,
            " · ".join(f"{k} {v}" for k, v in facts.items()), key, data, int(by_path),
            json.dumps(sorted(metric_names)), n_samples, run["folder"], run["started_at"],
            run["finished_at"], run.get("host"), columns["name"])


def data_by_path(config: dict[str, Any]) -> bool:
    """Whether the run's data can only be matched by its path: local data (not the Hub's)
    without the fingerprint config.json keeps since (``data_files``)."""
    data = config.get("data")
    return bool(data) and not str(data).startswith("hf://") and \
        not isinstance(config.get("data_files"), dict)


def _insert_summaries(db: Database, rows: list[tuple[Any, ...]]) -> None:
    db.executemany(f"INSERT INTO run_summary ({', '.join(SUMMARY_COLUMNS)}) VALUES "
                   f"({', '.join('?' * len(SUMMARY_COLUMNS))})", rows)


@contextmanager
def writable(path: str | Path | None = None,
             protocol_of: ProtocolOf | None = None) -> Iterator[Database]:
    """The store opened to write: created, its columns added, and with ``protocol_of`` every
    run without a summary of this revision summarised (the migration of a store from before
    the summary: each run's config and results read once, here, never again by a page)."""
    with opened(store_path(path), SCHEMA, COLUMNS) as db:
        _rename_averages(db)
        if protocol_of is not None and not has_summaries(db):
            # a localeval from before the summary forgets a run without its summary (and
            # records one without any): the orphans go, the runs without one are summarised
            with db.writing("run_summary"):
                db.execute("DELETE FROM run_summary WHERE run_id NOT IN (SELECT run_id FROM "
                           "runs)")
            stale = [run_id for (run_id,) in db.execute(
                "SELECT r.run_id FROM runs r LEFT JOIN run_summary s ON s.run_id = r.run_id "
                "AND s.revision = ? WHERE s.run_id IS NULL", (SUMMARY_REVISION,))]
            for start in range(0, len(stale), 500):
                _summarise(db, stale[start:start + 500], protocol_of)
        yield db


def _rename_averages(db: Database) -> None:
    """Issue 51 item 4's migration: each multiple-choice run's ``accuracy`` renamed
    ``average``, or dropped (a custom task's copy of ``micro``), and its summary deleted, to be
    written again (a seek on the metrics' name index when there is nothing to do). Runs read
    and changed in the transaction that changes them: a writer that renamed them meanwhile
    leaves nothing to do."""
    old = "SELECT m.run_id FROM metrics m JOIN runs r ON r.run_id = m.run_id WHERE " \
        "m.name = ? AND r.results_schema = ?"
    found = [run_id for (run_id,) in db.execute(old, (OLD_AVERAGE, MCQ_SCHEMA)).fetchall()]
    for start in range(0, len(found), 500):
        chunk = found[start:start + 500]
        marks = ", ".join("?" * len(chunk))
        with db.writing("run_summary"):
            rows = db.execute(f"SELECT r.run_id, r.results FROM runs r JOIN metrics m ON "
                              f"m.run_id = r.run_id AND m.name = ? WHERE r.run_id IN "
                              f"({marks})", (OLD_AVERAGE, *chunk)).fetchall()
            taken = {run_id for (run_id,) in db.execute(
                f"SELECT run_id FROM metrics WHERE name = ? AND run_id IN ({marks})",
                (AVERAGE, *chunk))}
            renamed = [(AVERAGE, run_id, OLD_AVERAGE) for run_id, results in rows
                       if run_id not in taken and renamed_average(_json_object(results))]
            db.executemany("UPDATE metrics SET name = ? WHERE run_id = ? AND name = ?",
                           renamed)
            db.executemany("DELETE FROM metrics WHERE run_id = ? AND name = ?",
                           [(run_id, OLD_AVERAGE) for run_id, _ in rows])
            db.executemany("DELETE FROM run_summary WHERE run_id = ?",
                           [(run_id,) for run_id, _ in rows])


def _summarise(db: Database, run_ids: list[str], protocol_of: ProtocolOf) -> None:
    """Summarise these runs, read in the transaction that writes their summaries: a run
    replaced meanwhile by another process is summarised as it is now, or not at all (a run
    forgotten meanwhile)."""
    marks = ", ".join("?" * len(run_ids))
    with db.writing("run_summary"):
        cursor = db.execute(f"SELECT * FROM runs WHERE run_id IN ({marks})", tuple(run_ids))
        names = [d[0] for d in cursor.description]
        runs = [dict(zip(names, row)) for row in cursor.fetchall()]
        metric_names: dict[str, list[str]] = {}
        for run_id, name in db.execute(f"SELECT run_id, name FROM metrics WHERE run_id IN "
                                       f"({marks})", tuple(run_ids)).fetchall():
            metric_names.setdefault(run_id, []).append(name)
        rows = [summary_row(r, _json_object(r["config"]), _json_object(r["results"]).get(
            "n_samples"), metric_names.get(r["run_id"], []), protocol_of) for r in runs]
        db.execute(f"DELETE FROM run_summary WHERE run_id IN ({marks})", tuple(run_ids))
        _insert_summaries(db, rows)


def has_summaries(db: Database) -> bool:
    """Whether every run of the store has a summary of this revision (read-only: says, never
    writes one)."""
    return summarised(db) is not None


def summarised(db: Database) -> int | None:
    """How many runs the store holds when its summaries are exactly its runs', each of this
    revision, else None (a store from before the summary, or one a localeval from before it
    shares: a run it recorded has no summary, one it forgot keeps its summary; as many of
    each, the counts of runs and summaries agree, so they are compared run by run)."""
    try:
        (runs,) = db.execute("SELECT COUNT(*) FROM runs").fetchone()
        (summaries,) = db.execute("SELECT COUNT(*) FROM run_summary").fetchone()
        # each run's summary of this revision: as many as runs and as summaries, every run
        # has one (a run has one summary at most: its key) and no summary is another's
        (done,) = db.execute("SELECT COUNT(*) FROM run_summary s JOIN runs r ON r.run_id = "
                             "s.run_id WHERE s.revision = ?", (SUMMARY_REVISION,)).fetchone()
    except driver_errors():  # no such table: a store from before the summary
        return None
    return int(runs) if runs == summaries == done else None


def task_runs(task: str, path: str | Path | None = None) -> list[dict[str, Any]]:
    """Every recorded run of ``task``: its columns, its config, the samples it scored, the
    host it was recorded from, and its metrics by name."""
    with writable(path) as db:
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
             "metrics": current_names(r, metrics.get(r["run_id"], {})),
             "config": _json_object(r["config"]),
             "n_samples": _json_object(r["results"]).get("n_samples")} for r in rows]


def _json_object(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


# A run's id as ``leaderboard --json`` prints it (16 hex digits), or its first 6 or more: the
# references ``forget``, ``show``, ``compare`` and ``report`` take besides a folder's path.
RUN_ID = re.compile(r"[0-9a-f]{6,16}")


def forget(refs: list[str], missing: bool = False, path: str | Path | None = None) -> list[str]:
    """Remove runs from the store: each of ``refs`` a folder a run was recorded from (there
    or gone), or a run's id or its first 6+ hex digits (one run); with ``missing``, every run
    recorded from this machine whose folder is gone (a teammate's run on a shared store is
    never pruned from here). The folders are left alone. The ids removed. Any other
    reference (an empty one, an unset shell variable's, or one too short, which would match
    every run starting so) is refused before anything is removed."""
    here = socket.gethostname()
    with writable(path) as db:
        rows = db.execute("SELECT run_id, folder, host FROM runs").fetchall()
        chosen = [run_id for run_id, folder, host in rows
                  if missing and host == here and folder and not Path(folder).exists()]
        for ref in refs:
            chosen += [r for r in _referred(ref, rows, path) if r not in chosen]
        for run_id in chosen:
            with db.writing(run_id):
                db.execute("DELETE FROM run_summary WHERE run_id = ?", (run_id,))
                db.execute("DELETE FROM metrics WHERE run_id = ?", (run_id,))
                db.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
    return chosen


def _referred(ref: str, rows: list[tuple[str, str | None, str | None]],
              path: str | Path | None) -> list[str]:
    """The runs ``ref`` names in ``forget`` (``rows``: each run's id, folder and host): those
    recorded from its folder, else the one run
    its id or id prefix names; a reference that is neither is one line."""
    folder = str(Path(ref).resolve()) if ref.strip() else None  # "" would be here, the cwd
    by_folder = [run_id for run_id, recorded, _ in rows if folder and recorded == folder]
    if by_folder or (folder and Path(ref).is_dir()):  # a folder, recorded or not
        return by_folder
    if not RUN_ID.fullmatch(ref):
        raise StoreError(f"forget {ref!r}: not a run folder recorded in {store_label(path)} nor "
                         "a run id (6 to 16 hex digits, as `leaderboard --json` prints them); "
                         "nothing removed")
    by_id = [run_id for run_id, _, _ in rows if run_id.startswith(ref)]
    if len(by_id) > 1:
        raise StoreError(f"forget {ref}: several runs' ids start so ({', '.join(by_id[:5])}"
                         f"{', …' if len(by_id) > 5 else ''}); give more of the id; nothing "
                         "removed")
    return by_id


def run_folder(ref: str, path: str | Path | None = None) -> str:
    """``ref`` as a run folder: itself when it is a path, else the folder the store recorded
    for the run whose id starts with ``ref`` (6 to 16 hex digits, as ``leaderboard --json``
    gives them), so ``show``, ``compare`` and ``report`` read a teammate's run by its id."""
    if Path(ref).exists() or not RUN_ID.fullmatch(ref):
        return ref
    with opened(store_path(path), SCHEMA) as db:
        rows = db.execute("SELECT run_id, folder FROM runs WHERE run_id LIKE ?",
                          (ref + "%",)).fetchall()
    if len(rows) != 1:
        what = "several run ids start so" if rows else "no run folder and no run id"
        raise StoreError(f"{ref}: {what} in the results store {store_label(path)}")
    folder = str(rows[0][1] or "")
    if not folder or not Path(folder).is_dir():
        raise StoreError(f"run {rows[0][0]} was recorded from {folder}, which is not on this "
                         "machine (the store keeps its numbers, the folder its samples)")
    return folder


# ------------------------------------------------------------------ reading the summaries
SHOWN = ("run_id", "task", "results_schema", "model", "guard", "options", "protocol_text",
         "n_samples", "folder", "started_at", "finished_at", "host", "name")


@dataclass(frozen=True)
class Wanted:
    """Which summaries: each field empty for "any". ``model`` and ``protocol`` are words each
    found in the model's name or the protocol line (case-insensitive); ``guard`` is a guard's
    name ("none": no guard); ``since``/``until`` are days (YYYY-MM-DD) the run finished."""

    task: str = ""
    model: str = ""
    guard: str = ""
    protocol: str = ""
    since: str = ""
    until: str = ""

    def where(self) -> tuple[str, tuple[Any, ...]]:
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (("task", self.task), ("guard", self.guard)):
            if value:
                clauses.append(f"{column} = ?")
                params.append(value)
        for column, words in (("model", self.model), ("protocol_text", self.protocol)):
            for word in words.lower().split():
                clauses.append(f"LOWER(COALESCE({column}, '')) LIKE ? ESCAPE '!'")
                params.append(f"%{like(word)}%")
        if self.since:
            clauses.append("SUBSTR(COALESCE(finished_at, ''), 1, 10) >= ?")
            params.append(self.since)
        if self.until:
            clauses.append("finished_at IS NOT NULL AND SUBSTR(finished_at, 1, 10) <= ?")
            params.append(self.until)
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", tuple(params)


def like(text: str) -> str:
    """``text`` as it is inside a LIKE pattern (its % and _ no wildcards; ESCAPE '!')."""
    return text.replace("!", "!!").replace("%", "!%").replace("_", "!_")


def read_store(path: str | Path | None = None) -> AbstractContextManager[Database]:
    """The store opened read-only (``localeval view``): neither created nor migrated."""
    return opened(store_path(path), SCHEMA, read_only=True)


def summaries(db: Database, wanted: Wanted, limit: int, offset: int = 0) -> list[dict[str, Any]]:
    """The runs ``wanted`` picks, newest first, ``limit`` of them from ``offset``, each with
    its metrics; read from the summary and the metrics of these runs only."""
    where, params = wanted.where()
    rows = db.execute(f"SELECT {', '.join(SHOWN)} FROM run_summary{where} ORDER BY "
                      "finished_at DESC, run_id DESC LIMIT ? OFFSET ?",
                      (*params, limit, offset)).fetchall()
    return with_metrics(db, [dict(zip(SHOWN, row)) for row in rows])


def count(db: Database, wanted: Wanted) -> int:
    where, params = wanted.where()
    (n,) = db.execute(f"SELECT COUNT(*) FROM run_summary{where}", params).fetchone()
    return int(n)


def distinct(db: Database, column: str) -> list[str]:
    """The values of a summary column (``task``, ``guard``), sorted: a filter's choices."""
    return [str(v) for (v,) in db.execute(f"SELECT DISTINCT {column} FROM run_summary "
                                          f"WHERE {column} IS NOT NULL ORDER BY {column}")]


def with_metrics(db: Database, runs: list[dict[str, Any]],
                 names: list[str] | None = None) -> list[dict[str, Any]]:
    """``runs`` with ``metrics`` (by name; only ``names`` when given), read for them only."""
    for run in runs:
        run["metrics"] = {}
    by_id = {r["run_id"]: r for r in runs}
    ids = list(by_id)
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        only = f" AND name IN ({', '.join('?' * len(names))})" if names else ""
        for run_id, name, value in db.execute(
                f"SELECT run_id, name, value FROM metrics WHERE run_id IN "
                f"({', '.join('?' * len(chunk))}){only} ORDER BY run_id, name",
                (*chunk, *(names or []))):
            by_id[run_id]["metrics"][name] = value
    return runs
