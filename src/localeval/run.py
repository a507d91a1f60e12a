"""The run lifecycle, the same for every task: check, load the model, execute the task's
requests through the cache with a progress bar, score, summarise, and keep the typed run record
(:class:`~localeval.store.runs.RunRecord`) in the run folder from start to finish.

    data -> task.plan -> task.respond(execute) -> task.score -> task.summarise -> RunRecord

Only the lifecycle: what presents or publishes a run (its HTML report, its record in the results
store) is a step the caller hands in or runs after (:mod:`localeval.finish`), so this module
imports none of the views, the report or the figures.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from contextlib import ExitStack, suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from .backends.base import Backend, with_defaults
from .backends.cluster import Cluster, ClusterBackend
from .backends.config import BackendConfig, is_template_date
from .backends.registry import load_backend, parse_backend_spec
from .backends.roles import Model, closed_with, preflight_models, resolve_models
from .data.rows import field_limit, files_read, fingerprint
from .errors import LocalevalError
from .records import task_results, task_sample
from .store import executor
from .store.batches import BatchLedger
from .store.cache import check_cache_file
from .store.embed_cache import SharedEmbeddings, say_hits
from .store.executor import CachedExecutor, commit_interval, open_cache
from .store.provenance import run_provenance
from .store.runs import (
    DATA_FILES,
    FirstRun,
    RunInProgress,
    RunRecord,
    as_stored_samples,
    check_output_folder,
    check_same_backend,
    check_same_run,
    first_run,
    load_run_state,
    now,
    run_folder_lock,
    save_run,
    with_history,
    write_config,
)
from .store.usage import Budget
from .tasks.base import Task
from .tasks.run_spec import CLUSTER, task_block
from .tasks.shards import SHARD, Shard


class FolderStep(Protocol):
    """A file the run folder gets before the run is marked finished (the HTML report,
    :class:`localeval.finish.ReportStep`): its failure fails the run, as a full disk does."""

    def prepare(self) -> None:
        """Called once every check has passed, while the model runs."""

    def write(self, finished: RunRecord, folder: Path) -> None:
        """Write it into ``folder``."""


def run_task(task: Task, model: str | Backend | None, *, output: str | Path | None = None,
             cache: str | Path | None = None,
             backend_options: BackendConfig | dict[str, Any] | None = None,
             role_options: Mapping[str, BackendConfig | Mapping[str, Any]] | None = None,
             quiet: bool = False, command: list[str] | None = None,
             overwrite: bool = False, finish_with: FolderStep | None = None,
             budget: Budget | None = None, shard: Shard | None = None,
             cluster: Cluster | None = None) -> RunRecord:
    """Run ``task`` on ``model`` (a backend spec such as ``hf:/path`` or a backend object) and,
    with ``output``, keep the run folder; ``cache`` is the SQLite file of finished requests.
    ``model`` None: the task's own (an embedding guard's embedder). ``backend_options`` apply to
    every model of the run whose backend takes them; ``role_options`` override them for one
    second model (``{"judge": {"device": "cpu"}}``). A folder that holds a run with other
    settings is refused unless ``overwrite``; with the same settings it is a rerun. Every check
    (model specs and options, folder, data, task options) comes before any model loads.
    ``finish_with``: a file the folder gets before the run is marked finished (the report).
    ``budget``: prices per million tokens (the cost in results.json) and the limits that stop
    the run, resumably (:mod:`.store.usage`). ``shard``: only that share of the items
    (:mod:`.tasks.shards`), recorded in config.json; ``localeval merge`` joins the shards.
    ``cluster``: the requests run on a Ray cluster's workers (:mod:`.backends.cluster`), this
    process alone writing the cache and the folder; recorded in config.json, the same run."""
    check_environment()
    target = choose_model(task, model)
    if cluster is not None and not isinstance(target, str):
        raise LocalevalError("--cluster loads the model on every worker from its spec "
                             "(hf:PATH, vllm:PATH, openai:NAME), not from a Python object")
    if cluster is not None and BackendConfig.of(backend_options).batch:
        raise LocalevalError("--cluster and --batch: a provider's Batch API is one queue; "
                             "send the batch from one machine (drop --cluster)")
    if cluster is not None:
        cluster.preflight()
    models = resolve_models(target, BackendConfig.of(backend_options), task.model_roles(),
                            role_options)
    place = RunPlace(Path(output) if output else None, cache, overwrite, command, quiet,
                     finish_with, budget, shard, cluster)
    if place.folder:
        check_output_folder(place.folder)
    with run_folder_lock(place.folder), ExitStack() as built:
        return _run(task, models, place, built)


def check_environment() -> None:
    """The numbers a run reads from the environment, checked before anything loads."""
    field_limit()
    commit_interval()


@dataclass(frozen=True)
class RunPlace:
    """Where a run keeps what it makes, and how it reports."""

    folder: Path | None
    cache: str | Path | None
    overwrite: bool
    command: list[str] | None
    quiet: bool
    finish_with: FolderStep | None = None  # written before the run is marked finished
    budget: Budget | None = None  # prices and the invocation's limits (store/usage.py)
    shard: Shard | None = None  # --shard: the share of the items this run answers
    cluster: Cluster | None = None  # --cluster, --workers: where the requests run

    def shard_fact(self) -> dict[str, Any]:
        """config.json's ``shard`` ("I/N"), in a shard's folder only: a whole run's config is
        as it was, so a merged folder is a whole run's; and ``cluster``, in a cluster run's
        (speed-role facts both: the run's name and protocol are a local run's)."""
        return {**({SHARD: str(self.shard)} if self.shard else {}),
                **({CLUSTER: self.cluster.fact()} if self.cluster else {})}


def _run(task: Task, models: list[Model], place: RunPlace, built: ExitStack) -> RunRecord:
    data, files_used = checked_data(task, models, place)
    models = [resumed_date(models[0], place), *models[1:]]
    if place.cache:
        check_cache_file(place.cache)  # before the model loads
    backend = closed_with(built, models[0], _load(models[0]))
    if place.cluster is not None:  # planned here, run on the cluster's workers
        backend = closed_with(built, models[0], _on_cluster(backend, models[0], place))
    check_same_backend(place.folder, backend.identity, place.overwrite)
    _keep_batches(backend, place)
    roles = RoleModels(models[1:], built)
    planned = task.plan(data, backend)
    if place.shard:  # planned whole (shots, config.json's subjects and languages), cut here
        planned = [p for p in planned if place.shard.holds(task.shard_key(p))]
    provenance = run_provenance(place.command)
    first = first_run(place.folder) if place.folder and not place.overwrite else None
    record = _new_record({**provenance, **task_block(task, data), **files_used,
                          **place.shard_fact()}, models, backend, place, first)
    if place.finish_with:
        place.finish_with.prepare()  # while the model runs
    try:
        started = time.perf_counter()
        with open_cache(place.cache) as store, \
                SharedEmbeddings.default(place.cache is not None, place.cache) as embeddings:
            execute = CachedExecutor(backend, store, place.quiet, task.progress_unit,
                                     roles=roles, budget=place.budget, embeddings=embeddings)
            answers = task.respond(planned, execute)
        say_hits(execute.embedded, place.quiet)
        elapsed = time.perf_counter() - started
        if roles.loaded:
            record.config["role_backends"] = {r: b.identity for r, b in roles.loaded.items()}
        samples = [task_sample(task.score(p, a))
                   for p, a in zip(planned, answers, strict=True)]
        results = task_results(task.summarise(samples, data, backend.identity))
    except BaseException as e:
        _fail(record, e)
        raise
    timing = {**_timing(elapsed, len(samples), task.rate_unit, backend), **execute.counts}
    if execute.embedded["embeddings"]:  # the shared embedding cache's hits (store/embed_cache)
        timing.update(execute.embedded)
    lifecycle_facts: dict[str, Any] = {"request_failures": dict(execute.failures)}
    if execute.failure_kinds:
        lifecycle_facts["request_failure_kinds"] = dict(sorted(execute.failure_kinds.items()))
    lifecycle_facts.update(execute.usage.results(place.budget))
    lifecycle_facts["timing"], lifecycle_facts["history"] = with_history(
        first, timing, {"started": record.started_at, "command": provenance["command"]})
    # typed as the folder will hold them (JSON, keys sorted), so what is printed and reported
    # now is what `localeval show` and `report` read back later
    finished = record.finish(results.with_values(lifecycle_facts), as_stored_samples(samples))
    for warning in finished.results.warnings:  # what qualifies a number: --quiet too
        print(f"warning: {warning}", file=sys.stderr)
    if place.folder:
        _save(record, finished, place.folder, place.finish_with)
    return finished


def resumed_date(model: Model, place: RunPlace) -> Model:
    """A rerun into a folder keeps the date its chat template was pinned to (config.json's
    ``backend.template_date``) when --template-date is not given; another one is another run."""
    if not place.folder or place.overwrite or not (place.folder / "config.json").exists():
        return model
    recorded = (load_run_state(place.folder).config.backend or {}).get("template_date")
    if not isinstance(recorded, str) or not is_template_date(recorded):
        return model  # none recorded (a template without a date), or a server not pinned
    given = model.config.template_date
    if given is None:
        return replace(model, config=replace(model.config, template_date=recorded))
    if given != recorded:
        raise LocalevalError(f"{place.folder} holds a run with other settings (template_date: "
                             f"{recorded!r} -> {given!r}); give another --output, or "
                             "--overwrite to replace it")
    return model


def _new_record(config: dict[str, Any], models: list[Model], backend: Backend, place: RunPlace,
                first: FirstRun | None) -> RunInProgress:
    """The record of the run in progress, its config.json written (a rerun keeps the command
    that made the run: this one goes to the history)."""
    config = {**config, "model": models[0].named, "backend": backend.identity}
    if first is not None:  # the run that made the numbers: its command, where it ran
        config["command"] = first.command
        config.pop(CLUSTER, None)
        if first.cluster:
            config[CLUSTER] = first.cluster
    if len(models) > 1:
        config["model_roles"] = {m.role: m.settings() for m in models[1:]}
    record = RunInProgress(config, folder=place.folder, started_at=now())
    write_config(record)  # a run kept in memory (no folder) writes none
    return record


def _on_cluster(local: Backend, model: Model, place: RunPlace) -> Backend:
    """The run's backend spread over ``place.cluster``'s workers, each loading ``model``; pieces
    of the run's chunk (:data:`.store.executor.CHUNK`), so the hf prefix tree computes what it
    computes here."""
    assert place.cluster is not None and isinstance(model.spec, str)
    return ClusterBackend(local, model.spec, model.config, place.cluster, executor.CHUNK,
                          place.quiet)


def _keep_batches(backend: Backend, place: RunPlace) -> None:
    """--batch: the backend keeps its batch ids in the run folder (a killed run re-attaches)."""
    if place.folder:
        backend.keep_batches(BatchLedger(place.folder))


def _save(record: RunInProgress, finished: RunRecord, folder: Path,
          step: FolderStep | None) -> None:
    """The run folder's files; the status says "finished" only once every one is written (the
    report too, when asked for), else "failed" with why (a full disk, say)."""
    try:
        save_run(finished, (lambda: step.write(finished, folder)) if step else None)
    except BaseException as e:
        with suppress(OSError):  # a full disk may refuse this line too
            _fail(record, e)
        raise


def load_model(spec: str, config: BackendConfig | None = None,
               role: str = "model", flag: str = "--model") -> Backend:
    """A model outside a task's run (the dataset tools' embedder and response model), with the
    same checks before it loads as a run's models; the caller closes it (``with``). ``flag``:
    the option that names it, said when it is not on this machine."""
    (model,) = resolve_models(spec, config or BackendConfig(), {})
    preflight_models([replace(model, role=role)], flags={role: flag})
    return _load(model)


def _load(model: Model) -> Backend:
    """The model's backend: loaded from its spec, or the caller's own object with the declared
    defaults of what it does not offer (:class:`~localeval.backends.base.Backend`)."""
    if isinstance(model.spec, str):
        return with_defaults(load_backend(model.spec, config=model.config))
    return with_defaults(model.spec)


class RoleModels:
    """The run's second models, each loaded when the task first asks for it (a rerun whose
    judge or translator requests are all cached may still load it: its identity keys the
    cache, as the run's own model's does), and closed with the run (``built``)."""

    def __init__(self, models: list[Model], built: ExitStack):
        self.models = models
        self.built = built
        self.loaded: dict[str, Backend] = {}

    def get(self, role: str) -> Backend | None:
        if role not in self.loaded:
            model = next((m for m in self.models if m.role == role), None)
            if model is None:
                return None
            self.loaded[role] = closed_with(self.built, model, _load(model))
        return self.loaded[role]


def checked_data(task: Task, models: list[Model], place: RunPlace
                 ) -> tuple[Any, dict[str, dict[str, dict[str, Any]]]]:
    """The task's data and the fingerprint of the files it was read from (``data_files``, or
    none for data from the Hub), after every check that needs no model: where each model comes
    from and its options, the data and task options, and (for a folder that holds a run) its
    settings, the data's fingerprint among them."""
    preflight_models(models, {m.role: way for m in models if (way := task.role_way(m.role))},
                     {m.role: flag for m in models if (flag := task.role_flag(m.role))})
    with files_read() as files:
        data = task.load()
    files_used = {DATA_FILES: fingerprint(files)} if files else {}
    if place.folder:
        # a whole run is shard None: never resumed into a shard's folder, nor a shard into its
        settings = {**task_block(task, data), "model": models[0].named, **files_used,
                    SHARD: str(place.shard) if place.shard else None}
        if len(models) > 1:
            settings["model_roles"] = {m.role: m.settings() for m in models[1:]}
        check_same_run(place.folder, settings, place.overwrite)
    return data, files_used


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
        if own is not None and own.startswith("none:"):
            raise LocalevalError(f"this guard needs no model ({own}); leave out --model")
        if own is not None and parse_backend_spec(own)[0] != kind:
            raise LocalevalError(f"this guard runs on its own model ({own}); leave out --model "
                                 f"or name another {parse_backend_spec(own)[0]}: model")
    return model


def _fail(record: RunInProgress, error: BaseException) -> None:
    """Mark the folder's run failed (a kill leaves it "running"); the cache keeps what finished."""
    if not record.folder:
        return
    record.status = "failed"
    record.finished_at = now()
    if isinstance(error, KeyboardInterrupt):
        record.error = "interrupted"
    else:
        record.error = f"{type(error).__name__}: {error}"
    write_config(record)


def _timing(seconds: float, n: int, unit: str, backend: Backend) -> dict[str, Any]:
    """The only part of results.json that changes from run to run."""
    return {"seconds": round(seconds, 3),
            f"{unit}_per_second": round(n / seconds, 3) if seconds else None,
            **backend.stats}
