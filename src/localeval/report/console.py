"""Print any run's results: the console layout is chosen by the results' schema.

On a terminal tables fit its width; piped or redirected, they are printed at full width in
plain text, so no cell is cut (``…``) or wrapped: ids stay whole for a person to copy. With
``--json`` commands print JSON instead.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

from .contamination_tables import print_contamination_report
from .llm_safety_tables import print_llm_safety_report
from .mcq_tables import print_mcq_report
from .safety_tables import print_safety_report

PIPED_WIDTH = 1000  # wide enough for any table we print; rich never pads a table to it


def make_console() -> Console:
    if sys.stdout.isatty():
        return Console()
    return Console(width=PIPED_WIDTH, no_color=True, highlight=False, soft_wrap=True)


def print_json(data: Any) -> None:
    print(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def print_results(results: dict, console: Console | None = None) -> None:
    schema = str(results.get("schema", ""))
    if schema.startswith("localeval.safety/"):
        print_safety_report(results, console)
    elif schema.startswith("localeval.contamination/"):
        print_contamination_report(results, console)
    elif schema.startswith("localeval.llm-safety/"):
        print_llm_safety_report(results, console)
    else:
        print_mcq_report(results, console)
