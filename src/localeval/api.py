"""Python entry points: ``evaluate(task=..., model=..., **options)`` runs any task end to end;
``load_results(folder)`` reads a finished run folder back (``load_run_state(folder)``: any
run's config and status); ``compare_runs`` is the paper's Table 3;
``write_report(folders)`` writes the HTML report (``localeval run`` does it after every run).

The flow, one direction (see docs/architecture.md): the task loads and checks its items -> plans
requests -> the backend executes them through the cache -> the task scores samples and
summarises them -> the run record in the run folder.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from .backends.base import Backend
from .backends.cluster import Cluster
from .backends.config import BackendConfig
from .errors import LocalevalError
from .finish import ReportStep, record_in_store
from .report import html
from .run import run_task
from .store.runs import RunRecord, check_report_output, load_run, load_run_state
from .store.usage import Budget
from .tasks.options import options_doc
from .tasks.registry import make_task, task_kinds
from .tasks.shards import Shard
from .views.mcq import compare_mcq_runs
from .views.safety import compare_runs, compare_safety_runs

__all__ = ["compare_mcq_runs", "compare_runs", "compare_safety_runs", "evaluate",
           "load_results", "load_run_state", "write_report"]


def evaluate(task: str = "tmlu", model: str | Backend | None = None, *,
             output: str | Path | None = None, cache: str | Path | None = None,
             backend_options: BackendConfig | dict[str, Any] | None = None,
             role_options: Mapping[str, BackendConfig | Mapping[str, Any]] | None = None,
             quiet: bool = False,
             command: list[str] | None = None, overwrite: bool = False,
             store: str | Path | bool | None = None, report: bool = False,
             budget: Budget | None = None, library_notices: bool = False,
             shard: Shard | str | None = None, cluster: Cluster | str | None = None,
             workers: int | None = None, **options: Any) -> RunRecord:
    """Evaluate ``model`` on ``task`` and (with ``output``) write the run folder.

    ``model`` is a backend spec such as ``hf:Qwen/Qwen2.5-7B-Instruct``, ``hf:/path/to/model``
    or ``openai:<served name>``, or a backend object (which stays open: a run closes only the
    backends it builds); None only for a task with a model of its own (a safeguard task with
    ``guard="embedding:<file>"``). ``backend_options`` (a
    :class:`~localeval.backends.config.BackendConfig` or a dict of its fields) apply to every
    model of the run whose backend takes them; ``role_options`` override them for one second
    model, by role (``{"judge": {"device": "cuda:1"}}``; the judge of ``llm-safety``, X-Guard's
    ``translator``). ``cache`` is a SQLite file of finished requests (resume after a kill).
    ``output`` that holds a run with other settings is refused unless ``overwrite``; with the
    same settings the run resumes. A finished run with a folder is recorded in the results
    store (``store``: a path, else ``$LOCALEVAL_STORE`` or
    ``$XDG_DATA_HOME/localeval/results.sqlite``; False: not recorded). ``report``: the folder
    also gets its HTML report, written before the run is marked finished. ``budget`` (a
    :class:`~localeval.store.usage.Budget`): prices per million tokens, for the cost in
    results.json, and ``max_spend`` / ``max_tokens``, which stop the run resumably. Other
    libraries' deprecation notices are hidden while the run lasts (:func:`quiet_third_party`)
    unless ``library_notices`` (the CLI's ``--debug``). ``shard`` (``"I/N"``): only that
    content-keyed share of the items (:mod:`~localeval.tasks.shards`), not recorded in the
    store: ``localeval merge`` makes the N shards' folders one run and records that.
    ``cluster``: a Ray address (``auto``, ``ray://head:10001``; needs ``localeval[ray]``): the
    run's requests go to ``workers`` Ray actors (default one per node, one per GPU of a node
    with GPUs), each loading ``model`` from its spec; this process alone writes the cache, the
    folder and the store, and a lost node's requests run again on the others
    (:mod:`~localeval.backends.cluster`). The same run as on this machine.

    ``options`` are the task's own (``localeval tasks`` lists the tasks); a name the task does
    not have is an error. A list option takes a list, or text as its flag does: ``subjects=
    "arts"`` is one subject, ``"arts,virology"`` two. By kind of task:

    {options}
    """
    if isinstance(shard, str):
        shard = Shard.parse(shard)
    if isinstance(cluster, str):
        cluster = Cluster(cluster, workers)
    elif workers is not None:
        raise LocalevalError("--workers is for a --cluster run")
    with nullcontext() if library_notices else quiet_third_party():
        record = run_task(make_task(task, **options), model, output=output, cache=cache,
                          backend_options=backend_options, role_options=role_options,
                          quiet=quiet, command=command, overwrite=overwrite,
                          finish_with=ReportStep() if report else None, budget=budget,
                          shard=shard, cluster=cluster)
    if record.folder and store is not False and shard is None:  # a part's numbers: not a run's
        record_in_store(record, store if store is not True else None)
    return record


@contextmanager
def quiet_third_party() -> Iterator[None]:
    """While a run lasts, the notices the CLI hides (cli.quiet_third_party: FutureWarnings and
    DeprecationWarnings, transformers' `past_key_values is deprecated` log line) are hidden
    here too; on return the caller's warning filters and transformers' verbosity are as they
    were. A TRANSFORMERS_VERBOSITY the caller set is left to speak."""
    own_verbosity = "TRANSFORMERS_VERBOSITY" not in os.environ
    before = None
    if own_verbosity and "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging
        before = hf_logging.get_verbosity()
        hf_logging.set_verbosity(logging.ERROR)  # set_verbosity_error(), which is untyped
    elif own_verbosity:  # read by transformers when the run imports it
        os.environ["TRANSFORMERS_VERBOSITY"] = "error"
    try:
        with warnings.catch_warnings():
            for category in (FutureWarning, DeprecationWarning):
                warnings.filterwarnings("ignore", category=category)
            yield
    finally:
        if own_verbosity:
            os.environ.pop("TRANSFORMERS_VERBOSITY", None)
            if "transformers" in sys.modules:
                from transformers.utils import logging as hf_logging
                # transformers' default level (its WARNING is the standard library's)
                hf_logging.set_verbosity(before if before is not None else logging.WARNING)


def _options_doc() -> str:
    """Every task kind's options, from their declarations (tasks.options)."""
    parts = []
    for cls in task_kinds():
        title = (cls.Options.__doc__ or cls.__name__).strip().split("\n")[0]
        lines = options_doc(cls.Options).replace("\n", "\n    - ")
        parts.append(f"{title}\n\n    - {lines}")
    return "\n\n    ".join(parts)


if evaluate.__doc__:  # None under python -OO
    evaluate.__doc__ = evaluate.__doc__.replace("{options}", _options_doc())


def load_results(folder: str | Path) -> RunRecord:
    """The finished run of a folder: its config, results and samples, every file validated. A
    run that has not finished (still running, killed, failed) is refused in one line
    (:class:`~localeval.store.runs.NotFinished`); :func:`load_run_state` reads its status."""
    return load_run(folder)


def write_report(folders: list[str | Path], output: str | Path | None = None) -> Path:
    """Write the HTML report of one run folder (default ``<folder>/report.html``) or of several
    compared (``output`` required: an ``.html`` file, never another file of a run folder)."""
    if output is not None:
        check_report_output(Path(output), [Path(f) for f in folders])
    return html.write_report(folders, output)
