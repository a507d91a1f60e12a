"""App. D.5 of SEA-SafeguardBench: F1 and FPR at each file's own best-F1 threshold, in Table 2's
layout (results' ``table_d5``, made by ``analysis.safety``); read only, never recomputed."""

from __future__ import annotations

from ..records.safety import SafetyResults
from ..render.cells import short_model
from ..render.table import DataTable, Number, TableBuilder, columns
from .safety_tables import table2_column_name, table2_column_order

NAMES = {"f1": "F1", "fpr": "FPR"}


def d5_tables(results: SafetyResults) -> list[DataTable]:
    """One table per metric (F1, FPR, in points); none when the run has no D.5 tables."""
    out = []
    for name, table in results.table_d5.items():
        if not any(v is not None for row in table.rows for v in row.values.values()):
            continue
        cols = sorted(table.columns, key=table2_column_order)
        builder = TableBuilder(
            f"{results.task} · guard {results.guard} · {NAMES.get(name, name)} % at each "
            "file's best-F1 threshold (App. D.5, Table 2 layout)",
            columns("Model", *(table2_column_name(c) for c in cols)))
        for row in table.rows:
            builder.add(short_model(row.model), *(Number(row.values.get(c)) for c in cols))
        builder.caption = ("The threshold is the best of IRIS's grid on the file it is "
                           "reported on (IRIS SafeGuardMetric.update); a cell is the mean of "
                           "its files, as Table 2's; a file without safe items has no FPR.")
        out.append(builder.build())
    return out
