"""The view of contamination runs (TMLU §5.1): Min-K% and Min-K%++ per source and k, ROC-AUC
with membership labels, and the medians in the results store (not ranked: a lower score is not
a better model)."""

from __future__ import annotations

from rich.text import Text as RichText

from ..records import contamination
from ..records.contamination import ContaminationResults, Source
from ..records.metric_names import metric
from ..records.samples import SCORES, Score
from ..render.table import DataTable
from ..tasks.contamination_options import ContaminationOptions
from .base import Metric, Ranking, ResultsView
from .contamination_tables import contamination_notes, contamination_tables


class ContaminationView(ResultsView[ContaminationResults]):
    kind = "contamination"
    schema = contamination.SCHEMA
    Results = ContaminationResults
    Options = ContaminationOptions

    def tables(self, results: ContaminationResults) -> list[DataTable]:
        return contamination_tables(results)

    def headline(self, results: ContaminationResults) -> int:
        return len(contamination_tables(results))  # a few small tables, all of them headline

    def notes(self, results: ContaminationResults) -> list[RichText]:
        return contamination_notes(results)

    def store_metrics(self, results: ContaminationResults) -> list[Metric]:
        def median(source: Source, score: Score, k: str) -> float | None:
            summary = (source.summaries(score) or {}).get(k)
            return summary.median if summary else None

        return [(metric(score, name, k, "median"), median(source, score, k), source.n)
                for name, source in results.sources.items()
                for score in SCORES for k in results.k]

    def ranking(self, names: list[str]) -> Ranking:
        return Ranking(names, None, scale=1.0, digits=3, bounds=None,  # log-probs, not shares
                       unit="median mean log-prob per token (not ranked: a lower score is "
                            "not a worse model)")
