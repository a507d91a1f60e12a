"""Scores against gold severity (results' ``severity``, Parallax-AI ``SafetyMetrics``): read
only, never recomputed."""

from __future__ import annotations

from ..records.safety import SafetyResults
from ..render.cells import short_model
from ..render.table import DataTable, Number, TableBuilder, columns


def severity_table(results: SafetyResults) -> DataTable | None:
    """MSE and Spearman of P(harmful) against gold severity per task, subset and language."""
    if not results.severity:
        return None
    many = len({r.model for r in results.severity}) > 1
    table = TableBuilder("Scores against gold severity (Parallax-AI SafetyMetrics) · MSE · "
                         "Spearman", columns(*(["model"] if many else []), "task", "subset",
                                             "lang", "n", "MSE", "Spearman", text=3 + many))
    for r in results.severity:
        table.add(*([short_model(r.model)] if many else []), r.kind, r.subset, r.lang, r.n,
                  Number(r.mse, digits=4), Number(r.spearman, digits=3),
                  level=0 if r.lang == "all" else 1)
    table.caption = ("Severity: Harmful 1, Sensitive 0.5, Safe 0; the annotators' mean where "
                     "the item has annotations (cultural content generation), else its gold "
                     "label (Parallax-AI SEASafeguardBench). Samples judged with their prompt.")
    return table.build()
