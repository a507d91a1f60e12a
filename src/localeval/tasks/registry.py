"""The table of tasks: every name ``--task`` takes, the class that runs it, and what
``localeval tasks`` shows. A name not in the table is a custom multiple-choice task read from
``--data``. (Which view shows a kind's results is the views' own table, ``views/registry.py``.)
"""

from __future__ import annotations

from dataclasses import dataclass

from ..data.catalog import BUILTIN_TASKS
from .base import Task
from .contamination import ContaminationTask
from .custom import check_custom_name
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
    if name not in TASKS:  # a typo of a built-in name is refused (a custom task runs another
        check_custom_name(name, TASKS, options.get("data") is not None)  # protocol)
    return task_class(name)(name, **options)  # its Options refuse a name they do not have


def task_kinds() -> list[type[Task]]:
    """Every task class in the table, once each, in table order."""
    return list(dict.fromkeys(entry.cls for entry in TASKS.values()))
