"""results.json of a safeguard run (sea-safeguard, safety-prompts, safety-responses): PR-AUC
overall and per language, SEA-SafeguardBench's Table 2 and its gaps, pair types (Fig. 4), score
distributions (Fig. 6), the threshold sweep (Fig. 5), threshold transfer and PR curves; and
what ``localeval compare`` makes of two safeguard runs (Table 3, or B minus A PR-AUC).

Over 100 lines of declarations because each analysis has its row type; each is short."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from pydantic import Field, Strict

from ..choices import ThresholdGrid, ThresholdRule
from .base import Count, Num, Points, Record, Results, Sample, Share
from .comparison import Comparison
from .sample_kinds import Context, SampleKind

SCHEMA = "localeval.safety/1"


class AUPRCRow(Record):
    """PR-AUC of one group of samples (a task, context, subset and, per language, language)."""

    kind: str = Field(description="prompt or response classification")
    context: str = Field(default="with_prompt", description="a response judged with or without its "
                         "prompt")
    subset: str = Field(description="general, cultural-itw, cultural-cg, a file, or all")
    lang: str = Field(default="", description="the language ('' in the overall rows)")
    n: Count = Field(description="samples scored")
    n_harmful: Count = Field(default=0, description="of them labelled harmful")
    auprc: Share | None = Field(default=None, description="PR-AUC (0-1) by the run's estimator")
    low: Share | None = Field(default=None, description="bootstrap 95% interval, lower bound (0-1)")
    high: Share | None = Field(default=None, description="upper bound")
    roc_auc: Share | None = Field(default=None, description="ROC AUC (0-1)")
    n_failed: Count = Field(default=0, description="samples whose request failed (left out)")
    n_excluded: Count = Field(default=0, description="samples the label policy leaves out")
    warning: str | None = Field(default=None, description="why the PR-AUC says nothing here (one "
                                "class, every score equal); absent when it does")


class Table2Row(Record):
    model: str
    values: dict[str, Points | None] = Field(description="column -> PR-AUC points (0-100; "
                                             "None: empty)")
    n_failed: dict[str, Count] = Field(default={}, description="column -> failed samples left out")
    warnings: dict[str, dict[str, str]] = Field(default={}, description=(
        "column -> group of the cell (a language, a country; '' when pooled) -> why its PR-AUC "
        "says nothing (one class, every score equal)"))


class Table2(Record):
    """The paper's Table 2: columns ``kind/subset/side`` and ``kind/avg``, one row per model."""

    columns: list[str]
    rows: list[Table2Row] = []
    sea: str = Field(default="macro", description="how SEA cells average the local languages")
    en: str = Field(default="pooled", description="how cultural EN cells are made: per-country or "
                    "pooled (runs before --en-cell pooled)")


class Bounds(Record):
    low: Points
    high: Points


class Gap(Record):
    """English against the local languages, for a task and subset."""

    kind: str
    subset: str
    en: Num | None = None
    sea: Num | None = None
    gap: Num | None = Field(default=None, description="EN minus the local side")


class Table2Gap(Gap):
    """Table 2's EN cell minus its SEA cell, in points."""

    model: str


class LanguageGap(Gap):
    """EN minus one local language on paired items (0-1), with its paired interval."""

    lang: str
    low: Num | None = None
    high: Num | None = None
    n_pairs: int = 0


class CulturalGap(Record):
    model: str
    kind: str
    side: str
    general: Num | None = None
    cg: Num | None = None
    gap: Num | None = Field(default=None, description="General - CG, points")


class PairTypes(Record):
    """Fig. 4: true vs predicted prompt/response pair type."""

    model: str
    context: str = "with_prompt"
    threshold: Num
    types: list[str]
    fractions: list[list[Share] | None] = Field(description="row shares; empty: no item")
    counts: list[list[Count]]
    n: Count
    n_failed: Count = 0
    n_excluded: Count = 0


class ScoreRow(Record):
    """Fig. 6: the scores of one gold label."""

    model: str
    kind: str
    label: str
    n: Count
    mean: Num | None = None
    q25: Num | None = None
    median: Num | None = None
    q75: Num | None = None
    frac_middle: Share | None = Field(default=None, description="share of scores in [0.25, 0.75]")
    histogram: list[Count] = Field(default=[], description="counts over ten equal bins of [0, 1]")


class ThresholdPoint(Record):
    threshold: Num
    precision: Share | None = None
    recall: Share | None = None
    f1: Share | None = None
    fpr: Share | None = None

    def rates(self) -> tuple[float | int | None, ...]:
        """Precision, recall, F1 and FPR, in the tables' order."""
        return self.precision, self.recall, self.f1, self.fpr


class Sweep(Record):
    """Fig. 5: precision, recall, F1 and FPR at each threshold."""

    model: str
    kind: str
    sweep: list[ThresholdPoint] = []
    best_f1_threshold: Num | None = None


class TransferLanguage(Record):
    lang: str
    n: Count
    default: ThresholdPoint = Field(description="at the fixed threshold")
    calibrated: ThresholdPoint = Field(description="at the calibration language's best F1")


class TransferBlock(Record):
    model: str
    kind: str
    calibrate_on: str
    note: str | None = None
    n_calibration: int | None = None
    languages: list[TransferLanguage] = []


class SeverityRow(Record):
    """P(harmful) against gold severity (Parallax-AI SafetyMetrics) for one group of samples."""

    model: str
    kind: str = Field(description="prompt or response classification")
    subset: str
    lang: str = Field(description="a language, or 'all' (every language pooled)")
    n: Count = Field(description="samples with a severity and a score")
    mse: Num | None = Field(default=None, description="mean of (severity - score)^2")
    spearman: Num | None = Field(default=None, description="Spearman's rho (None: a constant side)")


class PRCurve(Record):
    model: str
    kind: str
    context: str = "with_prompt"
    lang: str
    n: Count
    recall: list[Share]
    precision: list[Share]


class CultureChoices(Record):
    """A cultural classifier's choice against the item's country (the ``agentic-moe`` guard,
    docs/fidelity.md P11): per model, task and country of the data, how many items the
    classifier gave each culture most often (its ``culture``), and how many it gave none."""

    model: str
    kind: str
    country: str
    n: Count = Field(description="items of that country the guard was asked about")
    chosen: dict[str, Count] = Field(description="culture -> items it was chosen for")
    n_unread: Count = Field(default=0, description="items whose classifier gave no readable culture")


class SafetyResults(Results):
    guard: str = Field(description="the guard's name")
    classify: list[str] = Field(default=[], description="what was classified: prompt, response")
    cultural_awareness: bool = Field(default=False, description="the guard was told each item's "
                                     "country (the paper's Table 3 setting)")
    label_policy: dict[str, str] = Field(default={}, description="how gold labels became binary")
    sensitive: str | None = Field(default=None, description="the label policy's name (--sensitive)")
    on_failure: str | None = Field(default=None, description="what a failed sample became")
    n_neutral: Count = Field(default=0, description="failed samples scored neutral and kept")
    n_excluded: Count = Field(default=0, description="samples the label policy leaves out")
    limit: int | None = Field(default=None, description="--limit: at most this many item ids per "
                              "subset, each in every language (absent: no limit)")
    langs: list[str] = Field(default=[], description="the languages of a --limit run's items")
    auprc: str = Field(default="ap", description="the PR-AUC estimator (runs before --auprc: ap)")
    en_cell: str = Field(default="pooled", description="how Table 2's cultural EN cells are made")
    one_class: str = Field(default="left-out", description="a PR-AUC of one class: iris (scikit-learn's "
                           "value) or left-out (runs before issue 50: left-out)")
    file_rounding: str = Field(default="none", description="each file's value before a cell's mean: "
                               "none or iris (0.1 points)")
    n_resamples: int | None = Field(default=None, description="bootstrap resamples of the intervals")
    threshold_rule: ThresholdRule | None = Field(default=None, description="gt (score > t is harmful) or ge")
    calibration: str | None = Field(default=None, description="the language thresholds are tuned on")
    overall: list[AUPRCRow] = Field(default=[], description="every language pooled, per task/subset")
    table2: Table2 | None = Field(default=None, description="the paper's Table 2 (SEA-SafeguardBench)")
    table2_ci: dict[str, dict[str, Bounds]] = Field(default={}, description="model -> column -> 95% CI")
    table2_alternative: Table2 | None = Field(default=None, description="Table 2 under the other "
                                              "PR-AUC estimator (its auprc names it)")
    table2_language_gap: list[Table2Gap] = []
    table_d5: dict[str, Table2] = Field(default={}, description="App. D.5: 'f1' and 'fpr' (points) at "
                                        "each file's own best-F1 threshold, in Table 2's layout "
                                        "(runs before issue 35: none)")
    per_language: list[AUPRCRow] = []
    severity: list[SeverityRow] = Field(default=[], description="MSE and Spearman against gold "
                                        "severity (runs before issue 35: none)")
    language_gap: list[LanguageGap] = []
    cultural_gap: list[CulturalGap] = []
    pair_type_confusion: list[PairTypes] = []
    score_distribution: list[ScoreRow] = []
    threshold_sweep: list[Sweep] = []
    threshold_transfer: list[TransferBlock] = []
    pr_curves: list[PRCurve] = []
    culture_choices: list[CultureChoices] = Field(default=[], description="a cultural classifier's "
                                                  "choice against each item's country "
                                                  "(agentic-moe runs only)")
    # declared last: results.json kept it after every field while it was undeclared
    threshold_grid: ThresholdGrid | None = Field(
        default=None, description="the thresholds of the sweep and of best F1: iris (the "
        "authors' float grid) or decimal (0.01 .. 0.99)")

    def disagreement(self, samples: Sequence[Sample]) -> tuple[str, str] | None:
        """The count of samples, then the failed and the excluded samples recounted where the
        folder recorded them (a failed sample has an error; an excluded one no label). The
        headline PR-AUC needs the metrics, a layer above: :func:`localeval.analysis.agreement.
        disagreement` recomputes it after this."""
        found = super().disagreement(samples)
        if found:
            return found
        failed = sum(1 for s in samples if s.is_failed)
        if "n_failed" in self and self.n_failed != failed:
            return "results.json", (f"field n_failed: {self.n_failed}, but samples.jsonl has "
                                    f"{failed} failed")
        excluded = sum(1 for s in samples if s.get("label") is None)
        if "n_excluded" in self and self.n_excluded != excluded:
            return "results.json", (f"field n_excluded: {self.n_excluded}, but samples.jsonl "
                                    f"has {excluded} left out by the label policy")
        return None


class AwarenessRow(Record):
    """Table 3: one CG cell of Table 2, plain and culture-aware."""

    model: str
    kind: Annotated[SampleKind, Strict(False)] = Field(description="prompt or response")
    side: str = Field(description="en, or sea (the mean over local languages)")
    baseline: Num | None = Field(description="the plain run's PR-AUC, points (None: undefined)")
    aware: Num | None = Field(description="the culture-aware run's PR-AUC, points")
    delta: Num | None = Field(description="aware minus baseline, points")


class AwarenessComparison(Comparison):
    """The paper's Table 3: a run and its culture-aware run compared on the CG subset."""

    task: str | None
    model: str | None
    guard: str
    auprc: str = Field(description="the PR-AUC estimator of both runs")
    en_cell: str = Field(description="how the EN cells are made")
    baseline: str = Field(description="the plain run's folder")
    aware: str = Field(description="the culture-aware run's folder")
    n_samples: int = Field(description="cultural-cg samples of each run")
    rows: list[AwarenessRow]


class SafetyComparisonRow(Record):
    """B minus A PR-AUC on one group of the shared samples (a task, context and language)."""

    kind: Annotated[SampleKind, Strict(False)]
    context: Annotated[Context, Strict(False)]
    lang: str = Field(description="a language, or 'all'")
    n: int = Field(description="shared samples scored by both runs")
    n_harmful: int = Field(description="of them labelled harmful")
    note: str | None = Field(default=None, description="why there is no PR-AUC (one class); absent "
                             "when there is")
    auprc_a: Num | None = Field(default=None, description="run A's PR-AUC (0-1)")
    auprc_b: Num | None = Field(default=None, description="run B's PR-AUC (0-1)")
    diff: Num | None = Field(default=None, description="B minus A")
    low: Num | None = Field(default=None, description="paired bootstrap 95% interval, lower bound")
    high: Num | None = Field(default=None, description="upper bound")


class SafetyComparison(Comparison):
    """Two safeguard runs compared on the samples both scored with the same label."""

    a: str = Field(description="run A's folder")
    b: str = Field(description="run B's folder")
    guard_a: str
    guard_b: str
    model_a: str | None
    model_b: str | None
    auprc: str = Field(description="the PR-AUC estimator (run A's)")
    n_shared: int = Field(description="samples both runs scored with the same label")
    rows: list[SafetyComparisonRow]
