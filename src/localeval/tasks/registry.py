"""The table of tasks: every name ``--task`` takes, the kind of task that runs it, and what
``localeval tasks`` shows. A name not in the table is a custom multiple-choice task read from
``--data``. (Which view shows a kind's results is the views' own table, ``views/registry.py``.)

Each kind is named here by its ``Options`` and command, with its class imported on first use:
building the command line (``localeval --help``) needs only the options, and the task modules
import numpy and pydantic.

Another package adds a task through an entry point in the group ``localeval.tasks`` (name =
``"package.module:TaskClass"``, :mod:`localeval.plugins`): it is listed from its metadata
without being imported, its class is imported when it runs, and its options are given with
``-T KEY=VALUE`` (the command line's flags are built without importing it). Its class is a
:class:`~localeval.tasks.base.Task` whose ``Options`` subclass ``TaskOptions``; its ``view``
(a ``ResultsView`` subclass) shows its results.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..data.catalog import BUILTIN_TASKS
from ..errors import LocalevalError
from ..plugins import TASK_GROUP, Part, declared
from .benchmarks import BENCHMARKS
from .contamination_options import ContaminationOptions
from .custom import check_custom_name
from .llm_safety_options import LLMSafetyOptions
from .mcq_options import MCQOptions
from .safety_options import SafeguardOptions

if TYPE_CHECKING:
    from .base import Task
    from .options import TaskOptions


@dataclass(frozen=True)
class TaskKind:
    """A kind of task as the command line needs it: its ``Options`` (the flags), the command that
    runs it, and its class from ``load`` (imported when first asked for). They are the class's
    own ``Options`` and ``command`` (a test checks each kind)."""

    Options: type[TaskOptions]
    load: Callable[[], type[Task]]
    command: str = "run"

    @property
    def cls(self) -> type[Task]:
        return self.load()


def _mcq() -> type[Task]:
    from .mcq import MCQTask

    return MCQTask


def _safeguard() -> type[Task]:
    from .safeguard import SafeguardTask

    return SafeguardTask


def _llm_safety() -> type[Task]:
    from .llm_safety import LLMSafetyTask

    return LLMSafetyTask


def _contamination() -> type[Task]:
    from .contamination import ContaminationTask

    return ContaminationTask


MCQ = TaskKind(MCQOptions, _mcq)
SAFEGUARD = TaskKind(SafeguardOptions, _safeguard)
LLM_SAFETY = TaskKind(LLMSafetyOptions, _llm_safety)
CONTAMINATION = TaskKind(ContaminationOptions, _contamination, "contamination")


@dataclass(frozen=True)
class PluginKind:
    """A kind of task another package declares: imported when it is first asked for."""

    part: Part
    command: str = "run"

    @property
    def cls(self) -> type[Task]:
        from .base import Task

        loaded = self.part.load()
        if not (isinstance(loaded, type) and issubclass(loaded, Task)):
            raise LocalevalError(f"task {self.part.name!r} ({self.part.target}, from "
                                 f"{self.part.origin}) is not a localeval Task subclass")
        return loaded

    @property
    def Options(self) -> type[TaskOptions]:  # noqa: N802 — as a TaskKind's and a Task's
        return self.cls.Options


@dataclass(frozen=True)
class TaskEntry:
    name: str
    kind: TaskKind | PluginKind | type[Task]  # a Task class itself for a kind added from Python
    source: str  # where the data comes from
    size: str  # how much there is, in the task's own units
    description: str

    @property
    def cls(self) -> type[Task]:
        return self.kind.cls if isinstance(self.kind, TaskKind | PluginKind) else self.kind


TASKS: dict[str, TaskEntry] = {
    **{spec.name: TaskEntry(spec.name, MCQ, spec.hub_id, f"{len(spec.subjects)} subjects",
                            spec.description) for spec in BUILTIN_TASKS.values()},
    # benchmarks over those datasets (tasks/benchmarks.py)
    **{name: TaskEntry(name, MCQ, BUILTIN_TASKS[b.dataset].hub_id,
                       f"{len(BUILTIN_TASKS[b.dataset].subjects)} subjects", b.description)
       for name, b in BENCHMARKS.items()},
    "sea-safeguard": TaskEntry("sea-safeguard", SAFEGUARD, "aisingapore/SEASafeguardBench",
                               "3 subsets", "SEA-SafeguardBench: guards on prompts and "
                               "responses, EN + 7 SEA languages"),
    "safety-prompts": TaskEntry("safety-prompts", SAFEGUARD, "(--data)", "",
                                "labelled prompt files: XSTest CSV, multilingual JailbreakBench "
                                "JSONL"),
    "safety-responses": TaskEntry("safety-responses", SAFEGUARD, "(--data)", "",
                                  "XSTest model completions as response classification"),
    "llm-safety": TaskEntry("llm-safety", LLM_SAFETY, "(--data, or the Hub benchmark)", "",
                            "a model's own answers to safe and harmful prompts, judged by a "
                            "guard: harmful-response and refusal rates (paper App. D.2)"),
    "contamination": TaskEntry("contamination", CONTAMINATION, "(--data, repeatable)", "",
                               "Min-K% Prob and Min-K%++ per text, compared across datasets "
                               "(TMLU §5.1); `localeval contamination`"),
}


# a kind of task: built in, another package's, or a Task class added from Python
AnyKind = TaskKind | PluginKind | type["Task"]


def _plugin_entries() -> dict[str, TaskEntry]:
    """The tasks other packages declare (group ``localeval.tasks``), none imported; a name a
    built-in task has is left out with one warning line (:func:`localeval.plugins.table`)."""
    out = {}
    for part in declared(TASK_GROUP):
        if part.name in TASKS or part.name in out:
            print(f"warning: {part.origin} declares task {part.name!r}, a name localeval or "
                  "another package already has; it is left out", file=sys.stderr)
            continue
        out[part.name] = TaskEntry(part.name, PluginKind(part), f"(from {part.origin})", "",
                                   f"a task of the package {part.origin} (its options: -T)")
    return out


TASKS.update(_plugin_entries())


def task_kind(name: str) -> TaskKind | PluginKind | type[Task]:
    """The kind of task ``name`` (its ``Options`` and ``command``), without importing its
    class; a name not in :data:`TASKS` is a custom multiple-choice task."""
    entry = TASKS.get(name)
    return entry.kind if entry else MCQ


def task_class(name: str) -> type[Task]:
    kind = task_kind(name)
    return kind.cls if isinstance(kind, TaskKind | PluginKind) else kind


def make_task(name: str, **options: Any) -> Task:
    """The task ``name`` made with its options; a name not in :data:`TASKS` needs ``data`` (a
    local multiple-choice folder or file)."""
    if name not in TASKS:  # a typo of a built-in name is refused (a custom task runs another
        check_custom_name(name, TASKS, options.get("data") is not None)  # protocol)
    return task_class(name)(name, **options)  # its Options refuse a name they do not have


def kinds() -> list[TaskKind | type[Task]]:
    """Every kind of task in the table but other packages', once each, in table order: what
    the command line builds its flags from (each has ``Options`` and ``command``), with no
    class imported."""
    return list(dict.fromkeys(entry.kind for entry in TASKS.values()
                              if not isinstance(entry.kind, PluginKind)))


def task_kinds() -> list[type[Task]]:
    """Every task class in the table but other packages', once each, in table order."""
    return list(dict.fromkeys(entry.cls for entry in TASKS.values()
                              if not isinstance(entry.kind, PluginKind)))


def plugin_tasks() -> list[PluginKind]:
    """The kinds of task other packages declare (none imported)."""
    return [e.kind for e in TASKS.values() if isinstance(e.kind, PluginKind)]
