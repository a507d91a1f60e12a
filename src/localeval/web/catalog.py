"""The runs the viewer shows: every run the results store recorded, and every finished run
folder found under the folders given (``--runs DIR``: a run made with ``--no-store`` too),
each under the store's id for its folder, so a run is one entry whichever way it was found."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import LocalevalError
from ..records import read_results
from ..store.files import read_plain_text
from ..store.results_db import folder_id, recorded_runs, store_path
from ..store.runs import NotFinished, RunFolderError, RunRecord, load_run, load_run_state
from ..views.registry import view_for, view_for_schema

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
    _loaded: dict[str, tuple[tuple, RunRecord]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def label(self) -> str:
        from ..store.database import shown

        parts = [f"store {shown(store_path(self.store))}"] if self.use_store else []
        return " · ".join(parts + [f"folders under {r}" for r in self.roots])

    def runs(self) -> list[dict[str, Any]]:
        """Newest first; a folder's run recorded in the store is listed once, as recorded."""
        found = recorded_runs(self.store) if self.use_store else []
        known = {r["run_id"] for r in found}
        for root in self.roots:
            for folder in _run_folders(root):
                entry = folder_entry(folder)
                if entry is not None and entry["run_id"] not in known:
                    known.add(entry["run_id"])
                    found.append(entry)
        return sorted(found, key=lambda r: (r["finished_at"] or "", r["run_id"]), reverse=True)

    def entry(self, run_id: str) -> dict[str, Any]:
        match = next((r for r in self.runs() if r["run_id"] == run_id), None)
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
            "metrics": {name: value for name, value, _ in view.store_metrics(results)},
            "config": config, "n_samples": results.n_samples}


def protocol_text(run: dict[str, Any]) -> str:
    """The run's protocol facts as one line ("limit none · method likelihood · …")."""
    try:
        facts = view_for_schema(run["results_schema"]).protocol(run["config"] or {})
    except LocalevalError:
        return ""
    return " · ".join(f"{key} {value}" for key, value in facts.items())


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
    return ranking.title(ranking.rank_by), f"{value * ranking.scale:.{ranking.digits}f}"


@dataclass(frozen=True)
class RunFilter:
    """The runs list's filters, each empty for "any": a task by name, words of the model's
    name and of the protocol (case-insensitive), and the day it finished (ISO dates)."""

    task: str = ""
    model: str = ""
    protocol: str = ""
    since: str = ""
    until: str = ""

    def keeps(self, run: dict[str, Any]) -> bool:
        day = (run["finished_at"] or "")[:10]
        return ((not self.task or run["task"] == self.task)
                and _has(str(run["model"] or ""), self.model)
                and _has(protocol_text(run), self.protocol)
                and (not self.since or day >= self.since)
                and (not self.until or bool(day) and day <= self.until))


def _has(text: str, words: str) -> bool:
    return all(w in text.lower() for w in words.lower().split())
