"""The analyses' choices and defaults that task options declare, without numpy: the command
line builds its flags from them, and ``localeval --help`` imports no array library."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, get_args

from ..metrics.choices import (
    DEFAULT_FILE_ROUNDING,
    PAPER_AUPRC,
    PAPER_ONE_CLASS,
    PAPER_THRESHOLD_GRID,
    PAPER_THRESHOLD_RULE,
    Auprc,
    FileRounding,
    OneClass,
    ThresholdGrid,
    ThresholdRule,
)

# How an EN cell of Table 2 is computed. "per-country" is the authors': IRIS
# `scripts/get_eval_result.py` (`report_sum_results`) averages the PR-AUC of each country's
# English file (the English versions of one country's cultural items; the General subset has one
# English file). "pooled" computes one PR-AUC over every English item of the subset.
EnCell = Literal["per-country", "pooled"]
EN_CELLS: tuple[EnCell, ...] = get_args(EnCell)
PAPER_EN_CELL: EnCell = "per-country"
N_RESAMPLES = 1000  # bootstrap resamples for the CIs
# What llm_safety.d2_table reproduces: "iris" (the authors' code) or "all" (ours: sensitive rows
# of every subset, failed verdicts left out)
D2Rates = Literal["iris", "all"]
D2_CHOICES: tuple[D2Rates, ...] = get_args(D2Rates)


class MetricChoices(Protocol):
    """What every analysis of a safeguard run reads (:func:`localeval.analysis.safety.analyses`):
    a safeguard task's options have these fields, so the task passes its options object."""

    @property
    def n_resamples(self) -> int: ...
    @property
    def calibrate_on(self) -> str: ...
    @property
    def auprc(self) -> Auprc: ...
    @property
    def threshold_rule(self) -> ThresholdRule: ...
    @property
    def en_cell(self) -> EnCell: ...
    @property
    def threshold_grid(self) -> ThresholdGrid: ...
    @property
    def one_class(self) -> OneClass: ...
    @property
    def file_rounding(self) -> FileRounding: ...


@dataclass(frozen=True)
class AnalysisChoices:
    """The choices alone, the authors' by default: for a caller of ``analyses`` that has no
    task options (a test, a script over a samples.jsonl)."""

    n_resamples: int = N_RESAMPLES
    calibrate_on: str = "en"
    auprc: Auprc = PAPER_AUPRC
    threshold_rule: ThresholdRule = PAPER_THRESHOLD_RULE
    en_cell: EnCell = PAPER_EN_CELL
    threshold_grid: ThresholdGrid = PAPER_THRESHOLD_GRID
    one_class: OneClass = PAPER_ONE_CLASS
    file_rounding: FileRounding = DEFAULT_FILE_ROUNDING
