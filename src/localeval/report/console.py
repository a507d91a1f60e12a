"""Print any run's results: the console layout is chosen by the results' schema."""

from __future__ import annotations

from rich.console import Console

from .mcq_tables import print_mcq_report
from .safety_tables import print_safety_report


def print_results(results: dict, console: Console | None = None) -> None:
    schema = str(results.get("schema", ""))
    if schema.startswith("localeval.safety/"):
        print_safety_report(results, console)
    else:
        print_mcq_report(results, console)
