"""The run lifecycle, the same for every task: check, load the model, execute the task's
requests through the cache with a progress bar, score, summarise, and keep the typed run record
(:class:`~localeval.store.runs.RunRecord`) in the run folder from start to finish.

    items -> task.plan -> task.respond(execute) -> task.score -> task.summarise -> RunRecord
"""

from __future__ import annotations

import math
import os
import platform
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from .backends.base import Backend, Request, Response, distinct
from .backends.registry import load_backend, parse_backend_spec, preflight
from .errors import LocalevalError
from .progress import progress_bar
from .store.cache import RequestCache
from .store.runs import (
    RunRecord,
    check_output_folder,
    check_same_run,
    now,
    run_folder_lock,
    save_run,
    write_config,
)
from .tasks.base import Task
from .version import __version__

CHUNK = 512  # requests per backend call: big enough for prefix sharing, small enough to lose little


def run_task(task: Task, model: str | Backend | None, *, output: str | Path | None = None,
             cache: str | Path | None = None, backend_options: dict | None = None,
             quiet: bool = False, command: list[str] | None = None,
             overwrite: bool = False, store: str | Path | bool | None = None) -> RunRecord:
    """Run ``task`` on ``model`` (a backend spec such as ``hf:/path`` or a backend object) and,
    with ``output``, keep the run folder; ``cache`` is the SQLite file of finished requests.
    ``model`` None: the task's own (an embedding guard's embedder). A folder that holds a run
    with other settings is refused unless ``overwrite``; with the same settings it is a rerun.
    Every check (model spec, folder, data, options) comes before the model loads. A finished
    run with a folder is recorded in the results store (``store``: its path, None for the
    default, False for none)."""
    model = choose_model(task, model)
    if output:
        check_output_folder(Path(output))
    with run_folder_lock(Path(output) if output else None):
        record = _run(task, model, output, cache, backend_options, quiet, command, overwrite)
    if record.folder and store is not False:
        _record_in_store(record, store if store is not True else None)
    return record


def _record_in_store(record: RunRecord, store: str | Path | None) -> None:
    """The results store gets the finished run; if it cannot, the run folder is still whole,
    and the failure is one warning line."""
    from .store.results_db import record_run, store_path

    try:
        record_run(record, store)
    except (OSError, sqlite3.Error) as e:
        print(f"warning: the run is complete in {record.folder}, but the results store "
              f"{store_path(store)} could not record it ({e})", file=sys.stderr)


def _run(task: Task, model: str | Backend, output: str | Path | None, cache, backend_options,
         quiet: bool, command, overwrite: bool) -> RunRecord:
    items = checked_items(task, model, output, backend_options, overwrite)
    backend = load_backend(model, **(backend_options or {})) if isinstance(model, str) else model
    planned = task.plan(items, backend)
    config = {**run_provenance(command), **task.describe(),
              "model": model if isinstance(model, str) else None, "backend": backend.identity}
    record = RunRecord(config, folder=Path(output) if output else None, started_at=now())
    if record.folder:
        write_config(record)
    try:
        started = time.perf_counter()
        with open_cache(cache) as store:
            execute = CachedExecutor(backend, store, quiet, task.progress_unit)
            answers = task.respond(planned, execute)
        elapsed = time.perf_counter() - started
        samples = [task.score(p, a) for p, a in zip(planned, answers, strict=True)]
        results = task.summarise(samples)
    except BaseException as e:
        _fail(record, e)
        raise
    results["timing"] = {**_timing(elapsed, len(samples), task.rate_unit, backend),
                         **execute.counts}
    record.results, record.samples = finite(results), samples
    record.status, record.finished_at = "finished", now()
    if not quiet:
        for warning in record.results.get("warnings", []):
            print(f"warning: {warning}", file=sys.stderr)
    if record.folder:
        save_run(record)
    return record


def checked_items(task: Task, model: str | Backend, output: str | Path | None,
                  backend_options: dict | None, overwrite: bool) -> list:
    """The task's items, after every check that needs no model: where the model comes from, the
    data and options, and (for a folder that holds a run) its settings."""
    if isinstance(model, str):
        preflight(model, **(backend_options or {}))
    items = task.load()
    if output:
        check_same_run(Path(output), {**task.describe(), "model": model if isinstance(model, str)
                                      else None}, overwrite)
    return items


def choose_model(task: Task, model: str | Backend | None) -> str | Backend:
    """The run's backend spec, checked before any data loads: the one given, else the task's
    own; a task with its own model accepts only another of the same kind."""
    if model is None:
        if task.default_model is None:
            raise LocalevalError(f"task {task.name!r} needs a model (--model)")
        return task.default_model
    if isinstance(model, str):
        kind, _ = parse_backend_spec(model)  # a typo in --model fails before any data loads
        own = task.default_model
        if own is not None and parse_backend_spec(own)[0] != kind:
            raise LocalevalError(f"this guard runs on its own model ({own}); leave out --model "
                                 f"or name another {parse_backend_spec(own)[0]}: model")
    return model


class CachedExecutor:
    """``execute(requests)``: finished requests are read back from the cache and the rest run
    on the backend, which reports each response as it finishes (``progress(i, response)``);
    each is stored at once (:class:`CacheWriter`), so a killed run resumes where it stopped,
    losing at most the requests in flight. ``on(other)`` runs another backend (a guard's helper
    model) through the same cache."""

    def __init__(self, backend: Backend, cache: RequestCache | None, quiet: bool, unit: str,
                 counts: dict[str, int] | None = None):
        self.backend, self.cache, self.quiet, self.unit = backend, cache, quiet, unit
        # Requests read back from the cache, and run (on any backend): the run's timing.
        self.counts = counts if counts is not None else {"requests_cached": 0, "requests_run": 0}

    def on(self, backend: Backend) -> CachedExecutor:
        return CachedExecutor(backend, self.cache, self.quiet, self.unit, self.counts)

    def __call__(self, requests: list[Request]) -> list[Response]:
        backend, cache = self.backend, self.cache
        responses = (cache.get_many(backend.identity, requests) if cache
                     else [None] * len(requests))
        missing = [i for i, r in enumerate(responses) if r is None]
        firsts, where = distinct([requests[i] for i in missing])  # identical ones run once
        todo = [missing[f] for f in firsts]
        copies = [(i, todo[w]) for i, w in zip(missing, where, strict=True) if i != todo[w]]
        self.counts["requests_run"] += len(todo)
        self.counts["requests_cached"] += len(requests) - len(todo) - len(copies)
        with progress_bar(self.unit, total=len(requests), done=len(requests) - len(todo),
                          quiet=self.quiet) as advance, \
                CacheWriter(cache, backend.identity) as writer:
            for start in range(0, len(todo), CHUNK):
                part = todo[start : start + CHUNK]
                report = _reporter(part, requests, responses, writer, advance)
                out = backend.run([requests[i] for i in part], progress=report)
                for k, (i, resp) in enumerate(zip(part, out, strict=True)):
                    if responses[i] is None:  # a backend that did not report this one
                        report(k, resp)
        for i, same in copies:
            responses[i] = responses[same]
        return responses


def _reporter(part: list[int], requests: list[Request], responses: list, writer: CacheWriter,
              advance) -> Callable:
    """The ``progress`` callback a backend gets: ``progress(k, response)`` as its k-th request
    finishes (from any thread). An old-style ``progress(n)`` only moves the bar."""
    def report(k: int, response: Response | None = None) -> None:
        if response is None:
            advance(k)
            return
        i = part[k]
        responses[i] = response
        writer.add(requests[i], response)
        advance(1)
    return report


class CacheWriter:
    """Stores finished responses in the cache in small batches: at least every ``interval``
    seconds or ``batch`` responses, and whatever is left on exit (even on an exception, so a
    Ctrl-C keeps what finished). Thread-safe: backends report from worker threads."""

    def __init__(self, cache: RequestCache | None, identity: dict, batch: int = 64,
                 interval: float | None = None):
        if interval is None:  # a kill loses at most this many seconds of finished requests
            interval = float(os.environ.get("LOCALEVAL_CACHE_COMMIT_SECONDS", 1.0))
        self.cache, self.identity, self.batch, self.interval = cache, identity, batch, interval
        self.pending: list[tuple[Request, Response]] = []
        self.lock = threading.Lock()
        self.last = time.monotonic()

    def add(self, request: Request, response: Response) -> None:
        if self.cache is None:
            return
        with self.lock:
            self.pending.append((request, response))
            due = len(self.pending) >= self.batch or \
                time.monotonic() - self.last >= self.interval
        if due:
            self.flush()

    def flush(self) -> None:
        with self.lock:
            pairs, self.pending, self.last = self.pending, [], time.monotonic()
        if pairs and self.cache is not None:
            self.cache.put_many(self.identity, pairs)

    def __enter__(self) -> CacheWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.flush()


def open_cache(path: str | Path | None) -> RequestCache | nullcontext:
    return RequestCache(path) if path else nullcontext()


def _fail(record: RunRecord, error: BaseException) -> None:
    """Mark the folder's run failed (a kill leaves it "running"); the cache keeps what finished."""
    if not record.folder:
        return
    record.status, record.finished_at = "failed", now()
    record.error = "interrupted" if isinstance(error, KeyboardInterrupt) else \
        f"{type(error).__name__}: {error}"
    write_config(record)


def _timing(seconds: float, n: int, unit: str, backend: Backend) -> dict[str, Any]:
    """The only part of results.json that changes from run to run."""
    return {"seconds": round(seconds, 3),
            f"{unit}_per_second": round(n / seconds, 3) if seconds else None,
            **getattr(backend, "stats", {})}


def run_provenance(command: list[str] | None) -> dict:
    """What every config.json starts with: versions and the command line."""
    return {"localeval_version": __version__, "python": platform.python_version(),
            "packages": _package_versions(), "command": command}


def _package_versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("torch", "transformers", "tokenizers", "datasets"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            pass
    return out


def finite(value: Any) -> Any:
    """NaN and infinities become None (JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value
