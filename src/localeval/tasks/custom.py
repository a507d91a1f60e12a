"""A task name that is not in the table: a typo of a built-in name is refused (it would run
another protocol: the TMLU prompt, every subject under "Other", the typo recorded as the task),
and a custom task says what it runs."""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterable

from ..data.catalog import BUILTIN_TASKS, default_prompt_style
from ..errors import LocalevalError
from .prompt_styles import PROMPT_STYLES

# difflib's ratio: "cmmu"/"cmmlu" 0.89 and "tmmlu"/"tmlu" 0.89 are typos; "mytmlu"/"tmlu" (0.80)
# and "cmmlu-local"/"cmmlu" (0.63) are names of their own.
TYPO_RATIO = 0.84


def close_task_names(name: str, names: Iterable[str]) -> list[str]:
    return difflib.get_close_matches(name.lower(), list(names), n=2, cutoff=TYPO_RATIO)


def check_custom_name(name: str, names: Iterable[str], has_data: bool) -> None:
    """One line for a name that is not a task: a near miss of a built-in one, or (without
    ``--data``) nothing to read a custom task from."""
    names = list(names)
    close = close_task_names(name, names)
    if close:
        raise LocalevalError(f"unknown task {name!r}; did you mean {' or '.join(close)}? (a "
                             "custom task over --data needs a name of its own, not close to a "
                             "built-in one)")
    if not has_data:
        raise LocalevalError(f"unknown task {name!r}; built-in tasks: {', '.join(names)} (or "
                             "pass --data PATH for a local folder as a custom task; `localeval "
                             "tasks` lists them)")


def custom_task_notice(name: str, prompt_style: str | None) -> str:
    """What a custom task runs, and how to choose otherwise (printed on stderr)."""
    style = prompt_style or default_prompt_style(name)
    how = "; ".join(f"--prompt-style {other.name} for {other.title} format"
                    for other in PROMPT_STYLES.values() if other.name != style)
    builtin = ", ".join(BUILTIN_TASKS)
    return (f"note: {name!r} is a custom task (not one of {builtin}): the prompt style is "
            f"{style} ({how}), and every subject is grouped under one discipline, Other; for a "
            f"benchmark's own prompt and disciplines, use --task {builtin.replace(', ', ' / ')}")


def announce_custom_task(name: str, prompt_style: str | None) -> None:
    print(custom_task_notice(name, prompt_style), file=sys.stderr)
