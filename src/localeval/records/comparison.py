"""What ``localeval compare`` produces: one record per kind of comparison, printed by the
view that made it and dumped whole by ``--json`` (:meth:`Record.data`)."""

from __future__ import annotations

from pydantic import Field

from .base import Record


class Comparison(Record):
    """Two runs compared. Each kind of task's view returns its own subclass, which names both
    runs by their specs (issue 61: the same names as the leaderboard's, the viewer's and the
    report's)."""

    name_a: str | None = Field(default=None, description="run A's name (its RunSpec's; None in a "
                               "comparison saved before names were kept)")
    name_b: str | None = Field(default=None, description="run B's name, told apart from A's where "
                               "they coincide")
