"""results.json of a contamination run (TMLU §5.1): Min-K% Prob and Min-K%++ per source dataset
and k, their median gaps, and ROC-AUC where membership labels were given."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from .base import Count, Num, Record, Results
from .samples import Score

SCHEMA = "localeval.contamination/1"


class Summary(Record):
    """One score over one source's texts at one k."""

    n: Count = Field(description="texts scored")
    median: Num | None = Field(default=None, description="median score (mean log-prob, <= 0)")
    mean: Num | None = Field(default=None, description="mean score")


class Source(Record):
    n: Count | None = Field(default=None, description="texts of the source")
    min_k: dict[str, Summary | None] | None = Field(default=None, description="Min-K% Prob per k")
    min_k_pp: dict[str, Summary | None] | None = Field(default=None, description="Min-K%++ per k (None: the "
                                                "backend gives no next-token distribution)")

    def summaries(self, score: Score) -> dict[str, Summary | None] | None:
        """The source's summaries of ``score`` per k (None: not computed)."""
        return self.min_k if score == "min_k" else self.min_k_pp


class ContaminationResults(Results):
    k: list[str] = Field(description="the percentages of lowest-probability tokens, as keys")
    sources: dict[str, Source] = Field(description="per --data source")
    source_order: list[str] | None = Field(default=None, description="the --data order")
    sign: str | None = Field(default=None, description="what the scores' sign means (--min-k-sign)")
    median_gaps: dict[str, dict[str, dict[str, Num]]] = Field(
        default={}, description="'a - b' -> score -> k -> difference of medians")
    roc_auc: dict[str, Any] | None = Field(default=None, description="members vs non-members, per "
                                           "score and k, with n, n_members or a note")
