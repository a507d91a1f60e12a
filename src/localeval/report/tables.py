"""Every table of a run, as its task kind's view builds them (data tables: the console, ``export``
and the HTML report render the same ones)."""

from __future__ import annotations

from ..records import Results
from ..render.table import DataTable
from ..views.registry import view_for


def run_tables(results: Results) -> list[DataTable]:
    """The tables of a run, in report order."""
    return view_for(results).tables(results)
