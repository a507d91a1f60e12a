"""Re-score a finished run without re-running it: the source run's requests are planned again
with its own options, so each keys the request cache exactly as it did, and the cached answers
are scored with the changed options (another extraction rule, label policy, threshold rule or
metric option; :mod:`.tasks.rescoring` says which). No model is loaded or called: the backend
here only replays the cache, and a request it does not find there is a failed sample, allowed
only where the source run's sample failed too.

The result is a new run folder (default ``<source>.rescored-<hash of the changes>`` beside the
source) whose config.json names its source (``rescored_from``: folder, finish time, the options
changed); the source folder and its record in the results store stay as they are.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .backends.base import Backend, Failed, Progress, Request, Response
from .backends.failures import Unsupported
from .data.rows import files_read, fingerprint
from .errors import LocalevalError
from .finish import record_in_store
from .records import Sample, task_results, task_sample
from .store.cache import RequestCache
from .store.executor import CachedExecutor
from .store.provenance import run_provenance
from .store.runs import (
    DATA_FILES,
    RunRecord,
    as_stored,
    as_stored_samples,
    check_output_folder,
    finished_record,
    load_run,
    now,
    run_folder_lock,
    save_run,
)
from .tasks.base import Task
from .tasks.options import declared_value, flag_of, make_options, option_fields
from .tasks.registry import make_task, task_class, task_kinds
from .tasks.rescoring import check_change, rescorable, source_options
from .tasks.run_spec import task_block

MISSING = "not in the source run's request cache (rescore calls no model)"


class CacheReplay(Backend):
    """A backend that only has the cache: it answers nothing, so every request the cache lacks
    comes back failed (and is counted in ``missed``). Its identity is the source run's
    backend's, so the cache is read under the same keys."""

    cuts_context = True  # a cut context was cut by the source run's backend, in the key

    def __init__(self, identity: dict[str, Any]) -> None:
        self.identity = identity
        self.missed = 0

    def run(self, requests: Sequence[Request],
            progress: Progress | None = None) -> Sequence[Response]:
        self.missed += len(requests)
        return [Failed(Unsupported(MISSING)) for _ in requests]


class ReplayRoles:
    """The source run's second models (a judge, a translator), each replayed from the cache."""

    def __init__(self, identities: dict[str, dict[str, Any]]) -> None:
        self.loaded = {role: CacheReplay(i) for role, i in identities.items()}

    def get(self, role: str) -> CacheReplay | None:
        return self.loaded.get(role)


def rescore_run(source: str | Path, changes: dict[str, Any], *, output: str | Path | None = None,
                cache: str | Path | None = None, store: str | Path | bool | None = None,
                command: list[str] | None = None, quiet: bool = False) -> RunRecord:
    """The run of folder ``source`` scored again with ``changes`` (task options by their
    Python name), written to ``output``; ``cache`` defaults to the source's cache.sqlite."""
    source = Path(source)
    record = load_run(source)  # a run that has not finished is refused here, in one line
    config = record.config.data()
    results = record.results.data()
    cls = task_class(str(config.get("task")))
    base = source_options(cls, config, results)
    _check_changes(cls, base, changes)
    changes = _typed(cls, changes)
    # a value its option refuses is one line now, before any folder is made
    make_options(cls.Options, str(config.get("task")), {**base, **changes})
    changed = {k: v for k, v in changes.items() if base.get(k) != v}
    if not changed:
        raise LocalevalError(f"nothing to change: {source} already has "
                             + (", ".join(f"{_flag(cls, k)} {v}" for k, v in changes.items())
                                if changes else "its options")
                             + f"; a rescore of it may change {_flags(cls)}")
    folder = Path(output) if output else default_output(source, changed)
    if folder.resolve() == source.resolve():
        raise LocalevalError(f"--output {folder} is the source run; rescore writes a new folder")
    check_output_folder(folder)
    cache = Path(cache) if cache else source / "cache.sqlite"
    if not cache.is_file():
        raise LocalevalError(f"{cache}: no request cache, so nothing to re-score (a run made "
                             "with --no-cache keeps none; give --cache FILE)")
    with run_folder_lock(folder):
        return _rescore(record, source, base, changed, folder, cache, store, command, quiet)


def _flag(cls: type[Task], name: str) -> str:
    """The flag of option ``name``, of this kind of task or any other."""
    fields = [f for kind in (cls, *task_kinds()) for f in option_fields(kind.Options)]
    field = next((f for f in fields if f.name == name), None)
    return flag_of(field) if field else name


def _flags(cls: type[Task]) -> str:
    return ", ".join(_flag(cls, n) for n in rescorable(cls)) or "nothing"


def _check_changes(cls: type[Task], base: dict[str, Any], changes: dict[str, Any]) -> None:
    refused = sorted(set(changes) - set(rescorable(cls)))
    if refused:
        raise LocalevalError(f"rescore cannot change {', '.join(_flag(cls, r) for r in refused)}"
                             f" of this run (a "
                             f"{cls.__name__}): it may change only {_flags(cls)}")
    for name in changes:
        check_change(cls, base, name)


def _typed(cls: type[Task], changes: dict[str, Any]) -> dict[str, Any]:
    """Each change given as text (``-T min_letters=5``) as its option declares it."""
    fields = {f.name: f for f in option_fields(cls.Options)}
    return {k: declared_value(cls.Options, fields[k], v, f"-T {k}") if isinstance(v, str) else v
            for k, v in changes.items()}


def default_output(source: Path, changed: dict[str, Any]) -> Path:
    digest = hashlib.sha256(json.dumps(changed, sort_keys=True, default=str).encode())
    return source.parent / f"{source.name}.rescored-{digest.hexdigest()[:8]}"


def _rescore(record: RunRecord, source: Path, base: dict[str, Any], changed: dict[str, Any],
             folder: Path, cache: Path, store: str | Path | bool | None, command: list[str] | None, quiet: bool) -> RunRecord:
    config = record.config.data()
    name = str(config["task"])
    source_task = make_task(name, **base)  # plans the requests as the source run did
    task = make_task(name, **{**base, **changed})  # scores the answers
    with files_read() as files:
        data = source_task.load()
    _check_data(record, fingerprint(files) if files else {})
    backend = CacheReplay(config.get("backend") or {})
    roles = ReplayRoles(config.get("role_backends") or {})
    started = now()
    begun = time.perf_counter()
    planned = source_task.plan(data, backend)
    with RequestCache(cache) as requests:
        execute = CachedExecutor(backend, requests, quiet, source_task.progress_unit, roles=roles)
        answers = source_task.respond(planned, execute)
    missed = backend.missed + sum(r.missed for r in roles.loaded.values())
    _check_missed(record, missed, len(planned), cache)
    _check_answers(record, [task_sample(source_task.score(p, a))
                            for p, a in zip(planned, answers, strict=True)], cache)
    samples = [task_sample(task.score(p, a)) for p, a in zip(planned, answers, strict=True)]
    results = task_results(task.summarise(samples, data, backend.identity)).with_values({
        "request_failures": dict(execute.failures),
        "usage": execute.usage.data(),  # every answer a cache hit: nothing sent
        "timing": {"seconds": round(time.perf_counter() - begun, 3), **execute.counts},
        "history": []})
    provenance = run_provenance(command)
    new_config = {**{k: v for k, v in config.items() if k != "command"}, **provenance,
                  **task_block(task, data),
                  "rescored_from": {"folder": str(source.resolve()),
                                    "finished_at": record.finished_at,
                                    "options": as_stored(changed)}}
    out = finished_record(new_config, results, as_stored_samples(samples), folder=folder,
                          started_at=started, finished_at=now())
    save_run(out)
    if store is not False:  # a run of its own in the store (its folder is its id)
        record_in_store(out, store if store is not True else None, "rescored run")
    return out


def _check_data(record: RunRecord, files: dict[str, dict[str, Any]]) -> None:
    """The data must be the source run's: the same files, byte for byte."""
    old = record.config.get(DATA_FILES)
    if old is not None and as_stored(files) != old:
        raise LocalevalError(f"{record.folder}: its data files changed since the run "
                             f"({', '.join(sorted(set(old) | set(files)))}); rescore scores "
                             "the same items the run answered")


def _check_answers(record: RunRecord, recomputed: list[Sample], cache: Path) -> None:
    """The cache must hold the answers the run recorded: scored again under the source's own
    options they give its samples.jsonl back, field for field. Skipped: a field the run's
    version did not write, and a sample that failed there (its request was never cached)."""
    if len(recomputed) != len(record.samples):
        raise LocalevalError(f"{record.folder}: it recorded {len(record.samples)} samples and its "
                             f"options plan {len(recomputed)}; rescore scores the same samples")
    for kept, again in zip(record.samples, as_stored_samples(recomputed), strict=True):
        if kept.is_failed or "failure" in kept:
            continue
        old, new = kept.data(), again.data()
        differs = next((key for key in old if key in new and old[key] != new[key]), None)
        if differs is not None:
            raise LocalevalError(
                f"{cache}: its answer to sample {kept.id} is not the one {record.folder} "
                f"recorded ({differs}: {_short(old[differs])} in the run, "
                f"{_short(new[differs])} in the cache); rescore scores the run's own answers: "
                "give the run's own --cache")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _check_missed(record: RunRecord, missed: int, n: int, cache: Path) -> None:
    """A request the cache lacks is allowed only as one the source run failed too (a failed
    request is never cached)."""
    failed = record.results.n_failed
    if missed > failed:
        raise LocalevalError(f"{missed} of {n} requests are not in {cache} (the source run "
                             f"failed {failed}); rescore reads answers from the source's cache "
                             "and calls no model: give its --cache, or rerun the source")
    if missed:
        print(f"note: {missed} request(s) failed in the source run and stay failed",
              file=sys.stderr)
