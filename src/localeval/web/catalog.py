"""The runs the viewer shows: every run the results store recorded, and every finished run
folder found under the folders given (``--runs DIR``: a run made with ``--no-store`` too),
each under the store's id for its folder, so a run is one entry whichever way it was found."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import LocalevalError
from ..records import read_results
from ..store.files import read_plain_text
from ..store.results_db import (
    UPGRADE,
    Wanted,
    count,
    distinct,
    folder_id,
    has_summaries,
    read_store,
    recorded_runs,
    store_path,
    summaries,
    summarised,
)
from ..store.runs import NotFinished, RunFolderError, RunRecord, load_run, load_run_state
from ..tasks.run_spec import RunSpec
from ..views.registry import view_for, view_for_schema

if TYPE_CHECKING:
    from ..store.database import Database

PAGE = 50  # runs on a page of the runs list, rows on a page of a leaderboard
PICKER = 200  # runs the compare page offers to choose from (its filters narrow them)
SCAN_DEPTH = 4  # how deep under a --runs folder run folders are looked for
KEPT = 8  # runs kept read (samples and all); the one read longest ago goes first
FILES = ("config.json", "results.json", "samples.jsonl")


class NotFound(LocalevalError):
    """No such run, or its folder is not on this machine."""


@dataclass
class Catalog:
    """The store (``None``: the default one; ``use_store`` False: none) and the folders
    scanned for runs."""

    store: str | Path | None = None
    roots: list[Path] = field(default_factory=list)
    use_store: bool = True
    _loaded: dict[str, tuple[tuple[int, ...], RunRecord]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def label(self) -> str:
        from ..store.database import shown

        parts = [f"store {shown(store_path(self.store))}"] if self.use_store else []
        return " · ".join(parts + [f"folders under {r}" for r in self.roots])

    def runs(self) -> list[dict[str, Any]]:
        """Every run, newest first; a folder's run recorded in the store is listed once, as
        recorded. Reads every run: the pages use :meth:`listing` instead."""
        found = [_summarised(r) for r in recorded_runs(self.store)] if self.use_store else []
        known = {r["run_id"] for r in found}
        found += [r for r in self._folders() if r["run_id"] not in known]
        return sorted(found, key=lambda r: (r["finished_at"] or "", r["run_id"]), reverse=True)

    def _folders(self) -> list[dict[str, Any]]:
        entries = (folder_entry(f) for root in self.roots for f in _run_folders(root))
        return [e for e in entries if e is not None]

    def listing(self, wanted: Wanted, limit: int = PAGE, offset: int = 0) -> Listing:
        """The runs ``wanted`` picks, newest first, ``limit`` from ``offset``: read from the
        store's run summaries, a page at a time (issue 53), with the runs of the folders
        scanned; a store from before the summary is read whole, as before, and ``note`` says
        how to upgrade it (the viewer never writes to a store)."""
        folders = self._folders()
        if self.use_store:
            with read_store(self.store) as db:
                total = summarised(db)
                if total is not None:
                    recorded = _recorded(db, [f["run_id"] for f in folders])
                    loose = [f for f in folders if f["run_id"] not in recorded]
                    shown = [f for f in loose if keeps(wanted, f)]
                    runs = summaries(db, wanted, offset + limit) if limit else []
                    runs = sorted(runs + shown, key=_newest, reverse=True)
                    matching = total if wanted == Wanted() else count(db, wanted)
                    return Listing(runs[offset:offset + limit], matching + len(shown),
                                   total + len(loose),
                                   sorted({*distinct(db, "task"), *(f["task"] for f in loose)}),
                                   sorted({*distinct(db, "guard"),
                                           *(f["guard"] for f in loose)}), "")
        every = self.runs()
        shown = [r for r in every if keeps(wanted, r)]
        return Listing(shown[offset:offset + limit], len(shown), len(every),
                       sorted({r["task"] for r in every}), sorted({r["guard"] for r in every}),
                       UPGRADE if self.use_store else "")

    def tasks(self) -> list[str]:
        """The tasks of the runs shown, by name (the leaderboard's choices)."""
        folders = sorted({f["task"] for f in self._folders()})
        if self.use_store:
            with read_store(self.store) as db:
                if has_summaries(db):
                    return sorted({*distinct(db, "task"), *folders})
            return sorted({r["task"] for r in self.runs()})
        return folders

    def board(self, task: str, any_protocol: bool, reference: str | None, limit: int,
              offset: int) -> tuple[dict[str, Any], str]:
        """The task's leaderboard, ``limit`` rows from ``offset``, and a note: ranked in the
        store from its summaries; with a store from before the summary, or runs of the task
        in folders scanned that the store has not recorded, every run of the task is read and
        ranked here as before (the note says why, for the old store)."""
        from ..report.leaderboard import leaderboard, store_leaderboard

        loose = [f for f in self._folders() if f["task"] == task]
        if self.use_store:
            with read_store(self.store) as db:
                if has_summaries(db) and not (loose and _recorded(
                        db, [f["run_id"] for f in loose]) != {f["run_id"] for f in loose}):
                    return store_leaderboard(task, db, any_protocol, reference, limit,
                                             offset), ""
        every = [r for r in self.runs() if r["task"] == task]
        every.sort(key=lambda r: (r["finished_at"] or "", str(r["model"]), r["run_id"]))
        board = leaderboard(task, every, any_protocol, reference)
        board["ranked_total"], board["apart_total"] = len(board["rows"]), len(board["apart"])
        board["rows"] = board["rows"][offset:offset + limit]
        board["apart"] = board["apart"][offset:offset + limit]
        return board, UPGRADE if self.use_store else ""

    def entry(self, run_id: str) -> dict[str, Any]:
        """The run ``run_id``: its summary (one row read), else a scanned folder's."""
        every = None
        if self.use_store:
            with read_store(self.store) as db:
                if has_summaries(db):
                    found = _by_id(db, run_id)
                    if found is not None:
                        return found
                    every = self._folders()
        if every is None:
            every = self.runs()
        match = next((r for r in every if r["run_id"] == run_id), None)
        if match is None:
            raise NotFound(f"no run {run_id!r} in {self.label()}")
        return match

    def record(self, run_id: str) -> RunRecord:
        """The run's folder read whole (validated), kept while its files are unchanged."""
        entry = self.entry(run_id)
        folder = Path(entry["folder"] or "")
        if not entry["folder"] or not folder.is_dir():
            raise NotFound(f"run {run_id} was recorded from {entry['folder']} on "
                           f"{entry.get('host') or 'another machine'}, which is not on this "
                           "machine (the store keeps its numbers, the folder its samples)")
        stamp = tuple(_mtime(folder / name) for name in FILES)
        with self._lock:
            kept = self._loaded.get(run_id)
        if kept is not None and kept[0] == stamp:
            return kept[1]
        try:  # no lock held while reading: a slow folder holds up its own pages only
            record = load_run(folder)
        except NotFinished as e:
            raise NotFound(str(e)) from None
        with self._lock:
            self._loaded.pop(run_id, None)
            self._loaded[run_id] = (stamp, record)
            while len(self._loaded) > KEPT:
                self._loaded.pop(next(iter(self._loaded)))
        return record


@dataclass
class Listing:
    """A page of runs: those shown, how many match, how many there are, the choices of the
    task and guard filters, and a note (an old store: how to upgrade it)."""

    runs: list[dict[str, Any]]
    matching: int
    total: int
    tasks: list[str]
    guards: list[str]
    note: str


def _newest(run: dict[str, Any]) -> tuple[str, str]:
    return (run["finished_at"] or "", run["run_id"])


def _recorded(db: Database, ids: list[str]) -> set[str]:
    if not ids:
        return set()
    return {i for (i,) in db.execute(f"SELECT run_id FROM run_summary WHERE run_id IN "
                                     f"({', '.join('?' * len(ids))})", tuple(ids))}


def _by_id(db: Database, run_id: str) -> dict[str, Any] | None:
    from ..store.results_db import SHOWN, with_metrics

    row = db.execute(f"SELECT {', '.join(SHOWN)} FROM run_summary WHERE run_id = ?",
                     (run_id,)).fetchone()
    return None if row is None else with_metrics(db, [dict(zip(SHOWN, row))])[0]


def _summarised(run: dict[str, Any]) -> dict[str, Any]:
    """A run read whole (a folder, or a store from before the summary) with the summary's
    columns: the guard, the protocol options and the protocol line."""
    config = run.get("config") or {}
    return {**run, **RunSpec.columns_of(config, run.get("model")),
            "protocol_text": _protocol_line(run)}


def keeps(wanted: Wanted, run: dict[str, Any]) -> bool:
    """What :class:`Wanted` keeps in the store, for a run read whole."""
    day = (run["finished_at"] or "")[:10]
    return ((not wanted.task or run["task"] == wanted.task)
            and (not wanted.guard or run["guard"] == wanted.guard)
            and _has(str(run["model"] or ""), wanted.model)
            and _has(run["protocol_text"], wanted.protocol)
            and (not wanted.since or day >= wanted.since)
            and (not wanted.until or bool(day) and day <= wanted.until))


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


def _run_folders(root: Path) -> list[Path]:
    """Folders holding a config.json under ``root``, at most SCAN_DEPTH deep, links not
    followed (a link could lead out of the folder given, or round in a circle)."""
    out, base = [], len(root.parts)
    for here, dirs, names in os.walk(root):
        if "config.json" in names:
            out.append(Path(here))
        if len(Path(here).parts) - base >= SCAN_DEPTH:
            dirs.clear()
        dirs.sort()
    return out


def folder_entry(folder: Path) -> dict[str, Any] | None:
    """A finished run folder as the store would list it; None for anything else (a running
    or failed run, a folder that is not a run, a damaged one)."""
    try:
        state = load_run_state(folder)  # results.json alone is read below: no samples
        if state.lifecycle.status != "finished" or not (folder / "results.json").is_file():
            return None
        results = read_results(json.loads(read_plain_text(folder / "results.json")))
    except (LocalevalError, RunFolderError, OSError, ValueError):
        return None
    view = view_for(results)
    config = state.config.data()
    return {"run_id": folder_id(folder), "task": str(config.get("task") or results.task or ""),
            "results_schema": view.schema, "model": config.get("model") or
            str((config.get("backend") or {}).get("model", "")),
            "folder": str(folder.resolve()), "started_at": state.lifecycle.started_at,
            "finished_at": state.lifecycle.finished_at, "host": None,
            "metrics": {str(name): value for name, value, _ in view.store_metrics(results)},
            "config": config, "n_samples": results.n_samples} | _columns(config, view.schema,
                                                                          folder)


def _columns(config: dict[str, Any], schema: str, folder: Path) -> dict[str, str]:
    run = {"task": str(config.get("task") or ""), "results_schema": schema, "config": config}
    return {**RunSpec.columns_of(config), "protocol_text": _protocol_line(run)}


def _protocol_line(run: dict[str, Any]) -> str:
    """The run's protocol facts as one line ("limit none · method likelihood · …")."""
    try:
        facts = view_for_schema(run["results_schema"]).protocol(run["config"] or {})
    except LocalevalError:
        return ""
    return " · ".join(f"{key} {value}" for key, value in facts.items())


def protocol_text(run: dict[str, Any]) -> str:
    return str(run.get("protocol_text") or "")


def headline_metric(run: dict[str, Any]) -> tuple[str, str]:
    """(title, value as printed) of the number the task's leaderboard ranks by."""
    try:
        ranking = view_for_schema(run["results_schema"]).ranking(list(run["metrics"]))
    except LocalevalError:
        return "", ""
    if not ranking.rank_by:
        return "", ""
    value = run["metrics"].get(ranking.rank_by)
    if value is None:
        return ranking.title(ranking.rank_by), ""
    # the leaderboard's check of a stored value (views.base.Ranking.problem): a hand edit
    # (-5, 1.5, inf, 'abc') is said, never printed as a number nor a page's HTTP 500
    problem = ranking.problem(value)
    if problem:
        return ranking.title(ranking.rank_by), (f"not shown: the store's {ranking.rank_by} "
                                                f"{problem}")
    return ranking.title(ranking.rank_by), f"{value * ranking.scale:.{ranking.digits}f}"


def items(run: dict[str, Any]) -> str:
    """The run's items as its summary (or results.json) counts them; a value no run writes
    (a hand edit of the store: -3, 'abc', 2.5) said, not shown as written."""
    n = run.get("n_samples")
    if n is None:
        return ""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        return f"not shown: the store's n_samples {n!r} is not a count"
    return str(n)


def _has(text: str, words: str) -> bool:
    return all(w in text.lower() for w in words.lower().split())
