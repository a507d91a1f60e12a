"""The table of tasks: every name ``--task`` takes, the class that runs it, and what
``localeval tasks`` shows. A name not in the table is a custom multiple-choice task read from
``--data``.

It is also the one place that reads a results.json ``schema``: :func:`view_for` finds the view
of the task kind that wrote it (``Task.view``), so the report, export, the results store, the
leaderboard and ``compare`` ask that view instead of branching on the kind of task.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from ..data.catalog import BUILTIN_TASKS
from ..errors import LocalevalError
from .base import Task
from .contamination import ContaminationTask
from .llm_safety import LLMSafetyTask
from .mcq import MCQTask
from .safeguard import SafeguardTask


@dataclass(frozen=True)
class TaskEntry:
    name: str
    cls: type[Task]
    source: str  # where the data comes from
    size: str  # how much there is, in the task's own units
    description: str


TASKS: dict[str, TaskEntry] = {
    **{spec.name: TaskEntry(spec.name, MCQTask, spec.hub_id, f"{len(spec.subjects)} subjects",
                            spec.description) for spec in BUILTIN_TASKS.values()},
    "sea-safeguard": TaskEntry("sea-safeguard", SafeguardTask, "aisingapore/SEASafeguardBench",
                               "3 subsets", "SEA-SafeguardBench: guards on prompts and "
                               "responses, EN + 7 SEA languages"),
    "safety-prompts": TaskEntry("safety-prompts", SafeguardTask, "(--data)", "",
                                "labelled prompt files: XSTest CSV, multilingual JailbreakBench "
                                "JSONL"),
    "safety-responses": TaskEntry("safety-responses", SafeguardTask, "(--data)", "",
                                  "XSTest model completions as response classification"),
    "llm-safety": TaskEntry("llm-safety", LLMSafetyTask, "(--data, or the Hub benchmark)", "",
                            "a model's own answers to safe and harmful prompts, judged by a "
                            "guard: harmful-response and refusal rates (paper App. D.2)"),
    "contamination": TaskEntry("contamination", ContaminationTask, "(--data, repeatable)", "",
                               "Min-K% Prob and Min-K%++ per text, compared across datasets "
                               "(TMLU §5.1); `localeval contamination`"),
}


def task_class(name: str) -> type[Task]:
    entry = TASKS.get(name)
    return entry.cls if entry else MCQTask


def make_task(name: str, **options) -> Task:
    """The task ``name`` made with its options; a name not in :data:`TASKS` needs ``data`` (a
    local multiple-choice folder or file)."""
    if name not in TASKS and options.get("data") is None:
        raise LocalevalError(f"unknown task {name!r}; built-in tasks: {', '.join(TASKS)} (or "
                             "pass --data PATH for a local folder as a custom task; `localeval "
                             "tasks` lists them)")
    return task_class(name)(name, **options)  # its Options refuse a name they do not have


def task_kinds() -> list[type[Task]]:
    """Every task class in the table, once each, in table order."""
    return list(dict.fromkeys(entry.cls for entry in TASKS.values()))


def view_for(results: dict) -> Any:
    """The view (a ``localeval.views.ResultsView``) of the task kind whose results.json this
    is; one clear error for a schema no task kind declares."""
    schema = results.get("schema") if isinstance(results, dict) else None
    for cls in task_kinds():
        if cls.results_schema == schema:
            return make_view(cls)
    known = ", ".join(cls.results_schema for cls in task_kinds())
    raise LocalevalError(f"results with schema {schema!r} are of no task kind this localeval "
                         f"knows ({known}); were they written by another version?")


def view_for_task(name: str) -> Any:
    """The view of the task ``name`` (a custom name is a multiple-choice task)."""
    return make_view(task_class(name))


def make_view(cls: type[Task]) -> Any:
    """``cls.view`` made for ``cls``'s schema: a view class, or its import path
    ``"module:Class"`` (imported only now)."""
    view = cls.view
    if isinstance(view, str):
        module, _, name = view.partition(":")
        view = getattr(importlib.import_module(module), name)
    return view(cls.results_schema)
