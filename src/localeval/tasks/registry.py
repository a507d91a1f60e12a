"""The table of tasks: every name ``--task`` takes, the kind of task that runs it, and what
``localeval tasks`` shows. A name not in the table is a custom multiple-choice task read from
``--data``. (Which view shows a kind's results is the views' own table, ``views/registry.py``.)

Each kind is named here by its ``Options`` and command, with its class imported on first use:
building the command line (``localeval --help``) needs only the options, and the task modules
import numpy and pydantic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..data.catalog import BUILTIN_TASKS
from .benchmarks import BENCHMARKS
from .contamination_options import ContaminationOptions
from .custom import check_custom_name
from .llm_safety_options import LLMSafetyOptions
from .mcq_options import MCQOptions
from .safety_options import SafeguardOptions

if TYPE_CHECKING:
    from .base import Task


@dataclass(frozen=True)
class TaskKind:
    """A kind of task as the command line needs it: its ``Options`` (the flags), the command that
    runs it, and its class from ``load`` (imported when first asked for). They are the class's
    own ``Options`` and ``command`` (a test checks each kind)."""

    Options: type
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
class TaskEntry:
    name: str
    kind: TaskKind | type[Task]  # a Task class itself for a kind added from Python
    source: str  # where the data comes from
    size: str  # how much there is, in the task's own units
    description: str

    @property
    def cls(self) -> type[Task]:
        return self.kind.cls if isinstance(self.kind, TaskKind) else self.kind


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


def task_kind(name: str) -> TaskKind | type[Task]:
    """The kind of task ``name`` (its ``Options`` and ``command``), without importing its
    class; a name not in :data:`TASKS` is a custom multiple-choice task."""
    entry = TASKS.get(name)
    return entry.kind if entry else MCQ


def task_class(name: str) -> type[Task]:
    kind = task_kind(name)
    return kind.cls if isinstance(kind, TaskKind) else kind


def make_task(name: str, **options) -> Task:
    """The task ``name`` made with its options; a name not in :data:`TASKS` needs ``data`` (a
    local multiple-choice folder or file)."""
    if name not in TASKS:  # a typo of a built-in name is refused (a custom task runs another
        check_custom_name(name, TASKS, options.get("data") is not None)  # protocol)
    return task_class(name)(name, **options)  # its Options refuse a name they do not have


def kinds() -> list[TaskKind | type[Task]]:
    """Every kind of task in the table, once each, in table order: what the command line
    builds its flags from (each has ``Options`` and ``command``), with no class imported."""
    return list(dict.fromkeys(entry.kind for entry in TASKS.values()))


def task_kinds() -> list[type[Task]]:
    """Every task class in the table, once each, in table order."""
    return list(dict.fromkeys(entry.cls for entry in TASKS.values()))
