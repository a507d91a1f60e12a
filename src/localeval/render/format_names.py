"""The names of the text formats a table renders to (``export --format``, ``leaderboard
--format``), without rich: the command line builds its choices from them, and ``localeval
--help`` imports no rendering library. :data:`.formats.RENDER` holds a renderer for each (a
test checks that its keys are these)."""

from __future__ import annotations

FORMATS = ("md", "latex", "csv")
