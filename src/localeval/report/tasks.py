"""``localeval tasks``: the task table, or one task's subjects (multiple choice) or what it
classifies (safeguard tasks), as rows (for --json) and as a table."""

from __future__ import annotations

from difflib import get_close_matches
from typing import Any

from rich.table import Table as RichTable

from ..data.catalog import BUILTIN_TASKS
from ..errors import LocalevalError
from ..render.formats import to_console
from ..render.table import TableBuilder, columns
from ..tasks.benchmarks import dataset_of


def task_rows(task: str | None) -> list[dict[str, Any]]:
    from ..tasks.registry import TASKS, PluginKind

    if task is None:
        return [{"task": e.name, "source": e.source, "size": e.size,
                 "description": e.description} for e in TASKS.values()]
    dataset = dataset_of(task)
    if dataset in BUILTIN_TASKS:
        return [{"subject": s.id, "name": s.name, "discipline": s.discipline,
                 "level": s.level, "questions": s.n_questions, "options": s.n_options}
                for s in BUILTIN_TASKS[dataset].subjects.values()]
    if task in TASKS:
        e = TASKS[task]
        details = {} if isinstance(e.kind, PluginKind) else _safety_details(task)
        return [{"task": e.name, "source": e.source, "size": e.size,
                 "description": e.description, **details}]
    near = get_close_matches(task, list(TASKS), n=3)
    raise LocalevalError(f"unknown task {task!r}; "
                         + (f"did you mean {', '.join(near)}? " if near else "")
                         + f"tasks: {', '.join(TASKS)}")


def _safety_details(task: str) -> dict[str, Any]:
    from ..data.safety import SEA_LANGS, SUBSETS
    from ..tasks.safety_options import DEFAULT_CLASSIFY

    details: dict[str, Any] = {"classifies": ", ".join(DEFAULT_CLASSIFY.get(task, ()))}
    if task == "sea-safeguard":
        details.update(subsets=", ".join(SUBSETS), languages=", ".join(("en", *SEA_LANGS)))
    else:
        details["data"] = "--data FILE (required)"
    return details


def task_table(task: str | None, rows: list[dict[str, Any]]) -> RichTable:
    if task is None:
        title = "Built-in tasks (any local folder works too: --data PATH)"
    elif dataset_of(task) in BUILTIN_TASKS:
        title = f"{task} subjects"
    else:
        title = task
    names = list(dict.fromkeys(k for r in rows for k in r))
    table = TableBuilder(title, columns(*names, text=len(names)))
    for r in rows:
        table.add(*("" if r.get(c) is None else str(r[c]) for c in names))
    return to_console(table.build())
