"""What ``localeval rescore`` may change, and a finished run's task options read back from its
config.json and results.json: both declared by the kind of task's own ``Options`` (fields
declared ``rescorable``, and ``Options.recorded``), so rescore works for any kind that declares
some rescorable options, a kind from another package included.

A rescore re-plans the source run's requests with the source's own options (so each one keys
the cache as it did), and scores the cached answers with the changed options. Only options that
act after the answer may change: how a generated text becomes a letter, how labels count, the
threshold rule and grid, the PR-AUC and its intervals. Anything that changes a request (shots,
prompt style, method, guard, data) needs a new run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import LocalevalError
from .options import TaskOptions, rescorable

if TYPE_CHECKING:
    from .base import Task

__all__ = ["check_change", "rescorable", "source_options"]


def source_options(task_class: type[Task], config: dict[str, Any], results: dict[str, Any]
                   ) -> dict[str, Any]:
    """The options the source run was made with, as ``make_task`` takes them; a kind of task
    with no rescorable option is refused here, in one line."""
    if not rescorable(task_class):
        raise LocalevalError(f"rescore cannot change a {config.get('task')!r} run: none of its "
                             "options acts only on answers already given (rescorable options "
                             "are declared on a task's Options fields)")
    options: type[TaskOptions] = task_class.Options
    return options.recorded(config, results)


def check_change(task_class: type[Task], base: dict[str, Any], name: str) -> None:
    """One line when an option that may change cannot act on this run."""
    problem = task_class.Options.rescore_problem(base, name)
    if problem:
        raise LocalevalError(problem)
