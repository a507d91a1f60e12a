"""Print any run's results: the console layout is the view's of the run's task kind
(:func:`localeval.views.registry.view_for`).

On a terminal tables fit its width; piped or redirected, they are printed at full width in
plain text, so no cell is cut (``…``) or wrapped: ids stay whole for a person to copy. With
``--json`` commands print JSON instead.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from rich.console import Console

if TYPE_CHECKING:  # an annotation only: `localeval tasks` prints with this module too
    from ..records import Results

PIPED_WIDTH = 1000  # wide enough for any table we print; rich never pads a table to it


def make_console() -> Console:
    if sys.stdout.isatty():
        return Console()
    return Console(width=PIPED_WIDTH, no_color=True, highlight=False, soft_wrap=True)


def print_json(data: Any) -> None:
    print(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def print_results(results: Results, console: Console | None = None,
                  everything: bool = True) -> int:
    """The run's tables (all, or its headline ones) and notes; how many tables were left out."""
    from ..views.registry import view_for  # every view: numpy, pydantic

    return view_for(results).print(results, console or Console(), everything)
