"""``localeval merge A B … --output M`` (issue 66): the N shards of one run (``run --shard I/N``,
:mod:`.tasks.shards`) made the one run they add up to, as that run would have written it.

The shards must be one run spec (task, options, models and their backends, data fingerprint:
their config.json task blocks, :class:`~.tasks.run_spec.RunSpec`, without the shard), each of
one N, no share twice and none missing; anything else is refused in one line naming it. The
task is made again from the shards' options and its data loaded and planned whole (no model:
a backend that has only the cache plans it), which gives the order a single run writes its
samples in: each planned sample is taken from its shard's samples.jsonl, whose order a shard
keeps. The results are the task's own ``summarise`` of the merged samples; the shards' request
caches go into M's (so ``rescore M`` and a resume of M find every answer); M gets one entry in
the results store.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .data.rows import files_read, fingerprint
from .errors import LocalevalError
from .finish import record_in_store
from .records import Sample, task_results
from .rescore import CacheReplay
from .store.cache import RequestCache
from .store.provenance import run_provenance
from .store.runs import (
    DATA_FILES,
    RunRecord,
    as_stored,
    check_output_folder,
    finished_record,
    load_run,
    now,
    read_config,
    run_folder_lock,
    save_run,
)
from .tasks.base import Task
from .tasks.registry import make_task, task_class
from .tasks.run_spec import CLUSTER, RunSpec
from .tasks.shards import SHARD, Shard, shard_of

MERGED_FROM = "merged_from"  # config.json of a merged run: its shards' folders and N
# config.json's keys that say where and how this invocation ran, not what the run is
PROVENANCE = ("command", "localeval_version", "python", "packages", SHARD)


def merge_runs(folders: Sequence[str | Path], output: str | Path, *,
               store: str | Path | bool | None = None,
               command: list[str] | None = None) -> RunRecord:
    """The run the shard folders ``folders`` add up to, written to ``output`` (with its
    request cache) and recorded in the results store (``store``: a path, None the default,
    False none)."""
    output = Path(output)
    paths = [Path(f) for f in folders]
    if not paths:
        raise LocalevalError("merge: give the folders of every shard of one run")
    if any(p.resolve() == output.resolve() for p in paths):
        raise LocalevalError(f"--output {output} is one of the shards; merge writes a new folder")
    check_output_folder(output)
    _check_not_a_run(output)
    shards = [load_run(p) for p in paths]  # a shard that has not finished: one line, here
    count = _checked_shards(shards)
    with run_folder_lock(output):
        return _merge(shards, count, output, store, command)


def _check_not_a_run(output: Path) -> None:
    """M may be an earlier merge's folder (a merge job run again), never another run's."""
    if (output / "config.json").exists() and MERGED_FROM not in read_config(output):
        raise LocalevalError(f"--output {output} holds a run that no merge made; give a new "
                             "folder")


def shard_of_run(record: RunRecord) -> Shard:
    """The shard a finished run folder holds, or one line: a whole run is no shard."""
    recorded = record.config.data().get(SHARD)
    if recorded is None:
        raise LocalevalError(f"{record.folder} is a whole run, not a shard (made without "
                             "--shard); merge takes the folders of one run's --shard I/N")
    return Shard.parse(str(recorded))


def _checked_shards(shards: Sequence[RunRecord]) -> int:
    """N, once the shards are checked: one run spec, one N, each share once and none missing."""
    first, base = shards[0], _spec(shards[0])
    parts = [shard_of_run(s) for s in shards]
    count = parts[0].count
    seen: dict[int, RunRecord] = {}
    for record, part in zip(shards, parts, strict=True):
        if part.count != count:
            raise LocalevalError(f"{record.folder} is shard {part} and {first.folder} shard "
                                 f"{parts[0]}: the shards of one run share one N")
        difference = _difference(base, _spec(record))
        if difference:
            raise LocalevalError(f"{record.folder} is a shard of another run than "
                                 f"{first.folder} ({difference}); merge takes the shards of "
                                 "one run")
        if part.index in seen:
            raise LocalevalError(f"{seen[part.index].folder} and {record.folder} are both "
                                 f"shard {part} (they overlap); give each shard once")
        seen[part.index] = record
    missing = [i for i in range(count) if i not in seen]
    if missing:
        listed = ", ".join(f"{i}/{count}" for i in missing)
        raise LocalevalError(f"shard {listed} {'is' if len(missing) == 1 else 'are'} missing: "
                             f"merge needs all {count} shards of the run (run them with "
                             "--shard, then give every folder)")
    return count


def _spec(record: RunRecord) -> dict[str, Any]:
    """The run's identity as config.json's task block holds it, without its shard."""
    config = RunSpec.from_config(record.config.data()).to_config()
    config.pop(SHARD, None)
    config.pop(CLUSTER, None)  # where a shard ran (issue 70): a speed fact, not the run's
    stored: dict[str, Any] = as_stored(config)  # a dict reads back as one
    return stored


def _difference(base: dict[str, Any], other: dict[str, Any]) -> str | None:
    """The first way ``other`` differs from ``base``, in words (the data by its contents)."""
    data = [RunSpec.from_config(c).data.fact() for c in (base, other)]
    if data[0] != data[1]:  # the same contents from another path: said by the key below
        return f"other data: {data[0]} -> {data[1]}"
    key = next((k for k in sorted(set(base) | set(other)) if base.get(k) != other.get(k)), None)
    if key is None:
        return None
    shown = f"{key}: {base.get(key)!r} -> {other.get(key)!r}"
    return shown if len(shown) <= 160 else shown[:157] + "..."


def _merge(shards: Sequence[RunRecord], count: int, output: Path,
           store: str | Path | bool | None, command: list[str] | None) -> RunRecord:
    started = now()
    config = shards[0].config.data()
    name = str(config["task"])
    options = task_class(name).Options.recorded(config, shards[0].results.data())
    task = make_task(name, **options)
    with files_read() as files:
        data = task.load()
    if config.get(DATA_FILES) is not None and as_stored(fingerprint(files)) != \
            config[DATA_FILES]:
        raise LocalevalError(f"the data the shards read changed since they ran "
                             f"({', '.join(sorted(config[DATA_FILES]))}); merge plans the "
                             "same items the shards answered")
    backend = CacheReplay(config.get("backend") or {})
    samples = _in_run_order(task, task.plan(data, backend), shards, count)
    results = task_results(task.summarise(samples, data, backend.identity)).with_values(
        _lifecycle_facts(shards))
    merged_config = {**{k: v for k, v in config.items() if k not in PROVENANCE},
                     **run_provenance(command),
                     MERGED_FROM: {"folders": [str(s.folder.resolve()) for s in shards
                                               if s.folder is not None], "shards": count}}
    out = finished_record(merged_config, results, samples, folder=output, started_at=started,
                          finished_at=now())
    _merge_caches(shards, output / "cache.sqlite")
    save_run(out)
    if store is not False:
        record_in_store(out, store if store is not True else None, "merged run")
    return out


def _in_run_order(task: Task, planned: Sequence[Any], shards: Sequence[RunRecord],
                  count: int) -> list[Sample]:
    """The shards' samples in the order a single run writes them: each planned sample's from
    its shard, whose samples.jsonl keeps the run's order within the shard."""
    by_shard = {shard_of_run(s).index: (s, deque(s.samples)) for s in shards}
    merged = []
    for p in planned:
        key = task.shard_key(p)
        record, left = by_shard[shard_of(key, count)]
        if not left or str(left[0].id) != key:
            found = f"sample {left[0].id}" if left else "no more samples"
            raise LocalevalError(f"{record.folder} has {found} where the run plans item {key} "
                                 "(a shard made by another localeval, or edited?); merge "
                                 "takes shards as --shard wrote them")
        merged.append(left.popleft())
    extra = next(((s, left) for s, left in by_shard.values() if left), None)
    if extra is not None:
        raise LocalevalError(f"{extra[0].folder} holds {len(extra[1])} sample(s) the run does "
                             f"not plan (first: {extra[1][0].id}); merge takes shards as "
                             "--shard wrote them")
    return merged


def _lifecycle_facts(shards: Sequence[RunRecord]) -> dict[str, Any]:
    """What the run's lifecycle adds to results.json, over the shards: failed requests and
    tokens added up, the seconds and request counts summed, no history."""
    def summed(name: str) -> dict[str, Any]:
        return _added([s.results.data().get(name) or {} for s in shards])

    timing = {k: v for k, v in summed("timing").items() if not k.endswith("_per_second")}
    facts: dict[str, Any] = {"request_failures": summed("request_failures"),
                             "usage": summed("usage"), "timing": {**timing, "shards": len(shards)},
                             "history": []}
    kinds = summed("request_failure_kinds")
    if kinds:
        facts["request_failure_kinds"] = kinds
    return facts


def _added(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Dicts of numbers (nested: usage by role) added key by key; other values left out."""
    out: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if isinstance(value, dict):
                out[key] = _added([out.get(key) or {}, value])
            elif isinstance(value, int | float) and not isinstance(value, bool):
                out[key] = round(out.get(key, 0) + value, 3)
    return dict(sorted(out.items()))


def _merge_caches(shards: Sequence[RunRecord], cache: Path) -> None:
    """Every shard's cache.sqlite into M's; a shard without one (run with --no-cache or
    another --cache) is said, as ``rescore`` of M cannot read its answers."""
    with RequestCache(cache) as merged:
        for record in shards:
            own = record.folder / "cache.sqlite" if record.folder else None
            if own is not None and own.is_file():
                merged.add_from(own)
            else:
                print(f"note: {record.folder} has no cache.sqlite, so {cache} lacks its "
                      "answers (a rescore or resume of the merged run would ask for them)",
                      file=sys.stderr)
