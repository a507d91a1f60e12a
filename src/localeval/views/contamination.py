"""The view of contamination runs (TMLU §5.1): Min-K% and Min-K%++ per source and k, ROC-AUC
with membership labels, and the medians in the results store (not ranked: a lower score is not
a better model)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ..report.contamination_tables import contamination_tables, print_contamination_report
from .base import Metric, Ranking, ResultsView


class ContaminationView(ResultsView):
    kind = "contamination"

    def tables(self, results: dict) -> list[Table]:
        return contamination_tables(results)

    def print(self, results: dict, console: Console) -> None:
        print_contamination_report(results, console)

    def store_metrics(self, results: dict) -> list[Metric]:
        return [(f"{score}/{source}/{k}/median",
                 ((v.get(score) or {}).get(k) or {}).get("median"), v.get("n"))
                for source, v in results.get("sources", {}).items()
                for score in ("min_k", "min_k_pp") for k in results.get("k", [])]

    def ranking(self, names: list[str]) -> Ranking:
        return Ranking(names, None, scale=1.0, digits=3,  # mean log-probs, not shares
                       unit="median mean log-prob per token (not ranked: a lower score is "
                            "not a worse model)")
