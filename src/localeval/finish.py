"""The steps around a run's lifecycle that present or publish it, kept out of :mod:`.run` (which
imports nothing of the views, the report or the figures): the HTML report written into the run
folder before the run is marked finished (its figures' modules imported while the model runs),
and the record in the results store once the run is finished. ``api.evaluate`` hands the
report step to the lifecycle and records the finished run; ``rescore`` records its run the same
way.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .render.figures import import_in_background
from .report.html import write_report_of
from .store.database import StoreError
from .store.results_db import record_run
from .store.runs import RunRecord
from .views.registry import protocol_facts, view_for


class ReportStep:
    """``<folder>/report.html``, the last file written before config.json says "finished"
    (:class:`localeval.run.FolderStep`)."""

    def prepare(self) -> None:
        """Import the figures' modules (matplotlib) in the background while the model runs."""
        import_in_background()

    def write(self, finished: RunRecord, folder: Path) -> None:
        # the record is already as the folder holds it (run.py), so the report is byte for
        # byte the one `localeval report` writes from the folder later
        write_report_of([finished], folder / "report.html")


def record_in_store(record: RunRecord, store: str | Path | None, what: str = "run") -> None:
    """The results store gets the finished run with the headline metrics its view names; if it
    cannot, the run folder is still whole, and the failure is one warning line."""
    try:
        record_run(record, view_for(record.results).store_metrics(record.results), store,
                   protocol_of=protocol_facts)
    except StoreError as e:
        print(f"warning: the {what} is complete in {record.folder}, but it is not recorded: {e}",
              file=sys.stderr)
