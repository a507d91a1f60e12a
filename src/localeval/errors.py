"""Errors a user can hit. Each carries one line that names the thing and the fix.

The CLI prints ``str(error)`` alone (a traceback only with ``--debug``).
"""

from __future__ import annotations

import re
from pathlib import Path


class LocalevalError(Exception):
    """A problem the user can fix: bad data, unknown task, unreachable model, bad option."""


class OverContextError(LocalevalError):
    """A request over the model's context (prompt and what is to be generated): a backend
    fails that request alone, as a ``ContextOverflow`` (backends/failures.py)."""


class DataError(LocalevalError):
    """A malformed input row. Names the file, the row (1-based, as an editor shows it) and field."""

    def __init__(self, file: str | Path, row: int | None, field: str | None, problem: str):
        self.file = str(file)
        self.row = row
        self.field = field
        self.problem = problem
        where = self.file
        if row is not None:
            where += f", row {row}"
        if field is not None:
            where += f", field '{field}'"
        super().__init__(f"{where}: {problem}")


def env_number(name: str, default: float, *, low: float, high: float = float("inf"),
               integer: bool = False) -> float:
    """The number in environment variable ``name`` (``default`` when unset or empty), finite
    and in [low, high] (an integer with ``integer``): else one line naming the variable."""
    import math
    import os

    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    kind = "an integer" if integer else "a number"
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        value = None
    if value is None or not math.isfinite(value) or not low <= value <= high:
        bounds = f"at least {low:g}" if high == float("inf") else f"in [{low:g}, {high:g}]"
        raise LocalevalError(f"${name} must be {kind} {bounds}, not {raw[:40]!r}")
    return value


LONGEST_ECHO = 200  # characters of one word (a name, a path, a value) an error line repeats


def clipped(line: str) -> str:
    """``line`` with each run of more than :data:`LONGEST_ECHO` characters without a space cut
    in the middle: a name, a path or a value a user gave is echoed back whatever its length
    (a 100,000-character task name), and a message must stay one readable line."""
    half = LONGEST_ECHO // 2

    def cut(m: re.Match[str]) -> str:
        word = m.group(0)
        return f"{word[:half]}…[{len(word) - 2 * half} characters]…{word[-half:]}"

    return re.sub(rf"\S{{{LONGEST_ECHO + 1},}}", cut, line)


class UndefinedMetricWarning(UserWarning):
    """A ranking metric computed where it says nothing: one class only, or every score equal
    (scikit-learn's warning of the same name). Here, not in ``metrics``, so the command line can
    filter it without importing numpy."""
