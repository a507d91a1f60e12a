"""What ``localeval compare`` produces: one record per kind of comparison, printed by the
view that made it and dumped whole by ``--json`` (:meth:`Record.data`)."""

from __future__ import annotations

from .base import Record


class Comparison(Record):
    """Two runs compared. Each kind of task's view returns its own subclass."""
