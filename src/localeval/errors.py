"""Errors a user can hit. Each carries one line that names the thing and the fix.

The CLI prints ``str(error)`` alone (a traceback only with ``--debug``).
"""

from __future__ import annotations


class LocalevalError(Exception):
    """A problem the user can fix: bad data, unknown task, unreachable model, bad option."""


class DataError(LocalevalError):
    """A malformed input row. Names the file, the row (1-based, as an editor shows it) and field."""

    def __init__(self, file: str, row: int | None, field: str | None, problem: str):
        self.file, self.row, self.field, self.problem = str(file), row, field, problem
        where = self.file
        if row is not None:
            where += f", row {row}"
        if field is not None:
            where += f", field '{field}'"
        super().__init__(f"{where}: {problem}")
