"""Python entry points: ``evaluate(task=..., model=..., **options)`` runs any task end to end;
``load_results(folder)`` reads a run folder back; ``compare_runs`` is the paper's Table 3;
``write_report(folders)`` writes the HTML report (``localeval run`` does it after every run).

The flow, one direction (see docs/architecture.md): the task loads and checks its items -> plans
requests -> the backend executes them through the cache -> the task scores samples and
summarises them -> the run record in the run folder.
"""

from __future__ import annotations

from pathlib import Path

from .backends.base import Backend
from .compare import compare_mcq_runs, compare_runs, compare_safety_runs
from .report.html import write_report
from .run import run_task
from .store.runs import RunRecord, load_run
from .tasks.registry import make_task

__all__ = ["compare_mcq_runs", "compare_runs", "compare_safety_runs", "evaluate",
           "load_results", "write_report"]


def evaluate(task: str = "tmlu", model: str | Backend | None = None, *,
             output: str | Path | None = None, cache: str | Path | None = None,
             backend_options: dict | None = None, quiet: bool = False,
             command: list[str] | None = None, overwrite: bool = False,
             store: str | Path | bool | None = None, **options) -> RunRecord:
    """Evaluate ``model`` on ``task`` and (with ``output``) write the run folder.

    ``model`` is a backend spec such as ``hf:Qwen/Qwen2.5-7B-Instruct``, ``hf:/path/to/model``
    or ``openai:<served name>``, or a backend object; None only for a task with a model of its
    own (a safeguard task with ``guard="embedding:<file>"``). ``cache`` is a SQLite file of finished
    requests (resume after a kill). ``options`` are the task's own (``localeval tasks`` lists
    the tasks): for multiple-choice tasks ``data``, ``subjects``, ``shots``, ``method``, ``cot``,
    ``prompt_style``, ``chat``, ``system``, ``max_tokens``, ``limit``, ``dataset_revision``
    (:class:`localeval.tasks.mcq.MCQTask`); for safeguard tasks ``guard``, ``guard_options``,
    ``data``, ``subsets``, ``langs``, ``classify``, ``sensitive``, ``limit``,
    ``dataset_revision``, ``n_resamples``, ``calibrate_on``
    (:class:`localeval.tasks.safeguard.SafeguardTask`). ``output`` that holds a run with
    other settings is refused unless ``overwrite``; with the same settings the run resumes.
    A finished run with a folder is recorded in the results store (``store``: a path, else
    ``$LOCALEVAL_STORE`` or ``$XDG_DATA_HOME/localeval/results.sqlite``; False: not recorded).
    """
    return run_task(make_task(task, **options), model, output=output, cache=cache,
                    backend_options=backend_options, quiet=quiet, command=command,
                    overwrite=overwrite, store=store)


def load_results(folder: str | Path) -> RunRecord:
    """The run record of a folder: config, results, samples and its status."""
    return load_run(folder)
