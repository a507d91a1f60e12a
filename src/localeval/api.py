"""Python entry points: ``evaluate(...)`` runs a task end to end; ``load_results`` reads a run.

The flow, one direction: load items -> the task builds requests -> the backend executes them
(through the cache) -> the task extracts and scores -> metrics -> run folder.
"""

from __future__ import annotations

import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from . import __version__
from .backends.base import Backend, load_backend, parse_backend_spec
from .data.catalog import BUILTIN_TASKS, TaskSpec, custom_task, get_task
from .data.mcq_loaders import Splits, load_hub, load_local
from .errors import LocalevalError
from .metrics.mcq import aggregate
from .progress import progress_bar
from .store.cache import RequestCache
from .store.runs import load_run, save_run
from .tasks import mcq
from .tasks.prompts import PromptConfig

RESULTS_SCHEMA = "localeval.mcq/1"


@dataclass
class RunResult:
    config: dict
    results: dict
    samples: list[dict]
    folder: Path | None = None


def load_mcq_task(task: str, data: str | Path | None, subjects: list[str] | None,
                  revision: str | None = None) -> tuple[TaskSpec, dict[str, Splits]]:
    """The task's metadata and its items: from a local path when given, else from the Hub."""
    if data is not None:
        loaded = load_local(data, subjects)
        spec = BUILTIN_TASKS.get(task) or custom_task(task, sorted(loaded))
        return spec, loaded
    spec = get_task(task)
    wanted = subjects or list(spec.subjects)
    unknown = [s for s in wanted if s not in spec.subjects]
    if unknown:
        raise LocalevalError(f"unknown {task} subject(s): {', '.join(unknown)}; "
                             f"`localeval tasks {task}` lists them")
    splits = {"dev": spec.dev_split, "test": spec.test_split}
    return spec, load_hub(spec.hub_id, wanted, splits, revision)


def evaluate(
    task: str = "tmlu",
    model: str | Backend = "hf:Qwen/Qwen2.5-0.5B-Instruct",
    *,
    data: str | Path | None = None,
    subjects: list[str] | None = None,
    shots: int = 5,
    method: str = "likelihood",
    cot: bool = False,
    prompt_style: str = "tmlu",
    chat: str = "none",
    system: str | None = None,
    max_tokens: int | None = None,
    limit: int | None = None,
    output: str | Path | None = None,
    cache: str | Path | None = None,
    dataset_revision: str | None = None,
    backend_options: dict | None = None,
    quiet: bool = False,
    command: list[str] | None = None,
) -> RunResult:
    """Evaluate a model on a multiple-choice task and (if ``output``) write the run folder.

    ``model`` is a backend spec such as ``hf:Qwen/Qwen2.5-7B-Instruct`` or ``hf:/path/to/model``,
    or a backend object. ``cache`` is a SQLite file of finished requests (resume after a kill).
    """
    config = mcq.MCQConfig(
        method=method,
        prompt=PromptConfig(style=prompt_style, shots=shots, cot=cot, chat=chat, system=system,
                            task=task),
        max_tokens=max_tokens,
    )
    if isinstance(model, str):
        parse_backend_spec(model)  # a typo in --model should fail before any data loads
    spec, loaded = load_mcq_task(task, data, subjects, dataset_revision)
    backend = load_backend(model, **(backend_options or {})) if isinstance(model, str) else model
    count = backend.count_tokens if hasattr(backend, "count_tokens") else None
    context = backend.max_context() if hasattr(backend, "max_context") else None

    planned: list[mcq.Planned] = []
    for subject in sorted(loaded):
        splits = loaded[subject]
        if "test" not in splits:
            raise LocalevalError(f"subject {subject!r} has no test split in {data or spec.hub_id}")
        test = splits["test"][:limit] if limit else splits["test"]
        planned += mcq.plan(spec, subject, splits.get("dev", []), test, config, count, context)

    started = time.perf_counter()
    responses = _execute(backend, [p.request for p in planned], cache, quiet)
    elapsed = time.perf_counter() - started

    samples = [mcq.score(p, r, config) for p, r in zip(planned, responses)]
    metrics = aggregate(samples, spec.subjects, spec.disciplines)
    run_config = {
        **run_provenance(command),
        "task": task,
        "data": str(data) if data is not None else f"hf://{spec.hub_id}",
        "dataset_revision": dataset_revision,
        "subjects": sorted(loaded),
        "limit": limit,
        "method": method,
        "max_tokens": config.generation_budget if method == "generation" else None,
        "prompt": asdict(config.prompt),
        "model": model if isinstance(model, str) else None,
        "backend": backend.identity,
    }
    results = {
        "schema": RESULTS_SCHEMA,
        "task": task,
        "model": backend.identity.get("model"),
        "method": method,
        "shots": shots,
        "cot": cot,
        "prompt_style": prompt_style,
        "disciplines": list(spec.disciplines),
        "metrics": metrics,
        "n_samples": len(samples),
        "unanswered": [s["id"] for s in samples if s["pred"] is None],
        # The only part of results.json that changes from run to run.
        "timing": {"seconds": round(elapsed, 3),
                   "questions_per_second": round(len(samples) / elapsed, 3) if elapsed else None,
                   **getattr(backend, "stats", {})},
    }
    folder = save_run(output, run_config, results, samples) if output else None
    return RunResult(run_config, results, samples, folder)


def _execute(backend: Backend, requests: list, cache_path, quiet: bool,
             unit: str = "questions") -> list:
    """Run requests through the cache: finished ones are read back, the rest computed in chunks
    and stored after each chunk, so a killed run resumes where it stopped."""
    cache = RequestCache(cache_path) if cache_path else None
    responses = cache.get_many(backend.identity, requests) if cache else [None] * len(requests)
    todo = [i for i, r in enumerate(responses) if r is None]
    chunk = 512  # big enough for prefix sharing within a subject, small enough to lose little
    with progress_bar(unit, total=len(requests), done=len(requests) - len(todo),
                      quiet=quiet) as advance:
        for start in range(0, len(todo), chunk):
            part = todo[start : start + chunk]
            out = backend.run([requests[i] for i in part], progress=advance)
            for i, resp in zip(part, out):
                responses[i] = resp
            if cache:
                cache.put_many(backend.identity, [(requests[i], responses[i]) for i in part])
    if cache:
        cache.close()
    return responses


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


def load_results(folder: str | Path) -> RunResult:
    config, results, samples = load_run(folder)
    return RunResult(config, results, samples, Path(folder))
