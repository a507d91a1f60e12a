"""results.json of a multiple-choice run (TMLU, TMMLU+, CMMLU, a custom exam): accuracy pooled,
per discipline (the TMLU paper's Table 3 columns), level, year and subject."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field, model_validator

from ..choices import Method as Method  # how the answer is read (--method)
from .base import Count, Num, Record, Results, Share
from .comparison import Comparison
from .samples import MCQSample, Sample, read_sample

SCHEMA = "localeval.mcq/1"


class Accuracy(Record):
    """Accuracy over a group of questions (failed requests left out)."""

    n: Count = Field(description="questions scored in the group")
    correct: Count | None = Field(default=None, description="of them answered right")
    acc: Share | None = Field(default=None, description="correct / n (0-1); None when n is 0")
    stderr: Num | None = Field(default=None, description="its standard error (runs before intervals)")
    low: Share | None = Field(default=None, description="Wilson score 95% interval, lower bound (0-1)")
    high: Share | None = Field(default=None, description="Wilson score 95% interval, upper bound (0-1)")
    n_unanswered: Count = Field(default=0, description="questions with no extractable answer (wrong)")
    n_failed: Count = Field(default=0, description="questions whose request failed (left out)")

    @model_validator(mode="after")
    def _agrees(self) -> Accuracy:
        if self.correct is not None and self.correct > self.n:
            raise ValueError(f"correct {self.correct} is more than n {self.n}")
        return self


class Macro(Record):
    """The mean of the subjects' accuracies."""

    acc: Share | None = Field(default=None, description="mean subject accuracy (0-1)")
    stderr: Num | None = Field(default=None, description="sqrt(sum of squared standard errors) / S")
    n_subjects: Count | None = Field(default=None, description="subjects with an accuracy")


class MCQMetrics(Record):
    micro: Accuracy = Field(description="every question pooled")
    macro: Macro | None = Field(default=None, description="mean of the subjects")
    discipline_average: Share | None = Field(default=None, description="the paper's Average: mean of "
                                           "the discipline columns")
    by_discipline: dict[str, Accuracy] = Field(default={}, description="per discipline (Table 3)")
    by_level: dict[str, Accuracy] = Field(default={}, description="per education level")
    by_year: dict[str, Accuracy] = Field(default={}, description="per exam year (the floor grouped)")
    by_subject: dict[str, Accuracy] = Field(default={}, description="per subject")


class Spread(Record):
    """Accuracy (0-1) over option orders or sampled draws, one number each."""

    accuracy: list[Num | None] = Field(description="accuracy per order (or per draw), in order")
    mean: Num | None = Field(default=None, description="their mean")
    std: Num | None = Field(default=None, description="their sample standard deviation (n - 1)")
    low: Num | None = Field(default=None, description="Student's t 95% interval of the mean, lower")
    high: Num | None = Field(default=None, description="Student's t 95% interval of the mean, upper")
    n: int = Field(default=0, description="orders (or draws) with an accuracy")


class OrderSpread(Spread):
    same_option: Num | None = Field(default=None, description="share of questions answered with the "
                                    "same (original) option in every order")
    n_questions: int = Field(default=0, description="questions answered in every order")


class Robustness(Record):
    """--permute-options and --repeats (tasks/mcq_variants.py)."""

    orders: int = Field(description="cyclic shifts of the options asked (1: none)")
    repeats: int = Field(description="sampled draws per question (1: none)")
    permutation: OrderSpread | None = Field(default=None, description="accuracy over the orders")
    draws: Spread | None = Field(default=None, description="accuracy over the draws")


class MCQResults(Results):
    method: Method = Field(description="likelihood or generation")
    shots: int = Field(description="few-shot examples per question")
    cot: bool = Field(default=False, description="chain-of-thought prompting")
    prompt_style: str | None = Field(default=None, description="tmlu or lm-eval")
    paper_table: str | None = Field(default=None, description="the paper table the layout follows")
    disciplines: list[str] = Field(default=[], description="the task's discipline columns, in order")
    metrics: MCQMetrics
    robustness: Robustness | None = Field(default=None, description="accuracy over option orders and "
                                          "sampled draws, with --permute-options or --repeats")

    @property
    def average(self) -> float | None:
        """The paper's Average of a task with discipline columns (TMLU, TMMLU+, CMMLU); None
        for a custom task, whose one placeholder column holds every question (its mean is
        micro, never shown as another number; issue 51 item 4)."""
        return self.metrics.discipline_average if has_average(self.disciplines) else None

    def disagreement(self, samples: Sequence[Sample]) -> tuple[str, str] | None:
        """Each sample's own fields (its id once; ``correct`` true exactly when ``pred`` is
        ``gold``), then the pooled accuracy recomputed from them: the questions scored (failed
        requests left out), those right. (``correct`` is true, false or null: the sample's
        record says so where the line is read.)"""
        mine = mcq_samples(samples)
        found = super().disagreement(mine) or _contradicting_sample(mine)
        if found:
            return found
        scored = [s for s in mine if not s.failed]
        right = sum(1 for s in scored if s.correct is True)
        micro = self.metrics.micro
        if micro.n != len(scored) or micro.correct not in (None, right):
            return "results.json", (f"field metrics.micro: {micro.correct} right of {micro.n}, "
                                    f"but samples.jsonl has {right} right of {len(scored)}")
        return None


def has_average(disciplines: object) -> bool:
    """Whether a task's discipline columns (results.json ``disciplines``) make an Average
    apart from micro: more than one (a custom task has one placeholder, "Other")."""
    return isinstance(disciplines, list) and len(disciplines) > 1


def mcq_samples(samples: Sequence[Sample | Mapping[str, Any]],
                file: str = "samples.jsonl") -> list[MCQSample]:
    """``samples`` as multiple-choice sample records: those read from a folder are already;
    a script's (JSON data, or plain :class:`Sample` records) are read into one, a RecordError
    naming ``file``, the line and the field where one is not (``line 3: field gold: missing``)."""
    return [s if isinstance(s, MCQSample) else
            read_sample(MCQSample, s.data() if isinstance(s, Record) else dict(s),
                        f"{file}: line {number}")
            for number, s in enumerate(samples, start=1)]


def _contradicting_sample(samples: Sequence[MCQSample]) -> tuple[str, str] | None:
    first_line: dict[str | int, int] = {}
    for number, sample in enumerate(samples, start=1):
        where = f"line {number}"
        if sample.id in first_line:
            return "samples.jsonl", (f"{where}: field id: {sample.id!r} is on line "
                                     f"{first_line[sample.id]} too")
        first_line[sample.id] = number
        correct, pred, gold = sample.correct, sample.pred, sample.gold
        if correct is not None and "pred" in sample.model_fields_set and \
                correct != (pred == gold):
            said = "is" if pred == gold else "is not"
            return "samples.jsonl", (f"{where}: field correct: {str(correct).lower()}, but pred "
                                     f"{pred!r} {said} gold {gold!r}")
    return None


class PairedAccuracy(Record):
    """Two runs' accuracy on the same questions (each answered by both, failed requests left
    out), and the exact McNemar test of their difference."""

    n: Count = Field(description="questions both runs answered")
    acc_a: Share = Field(description="run A's accuracy on them (0-1)")
    acc_b: Share = Field(description="run B's accuracy on them (0-1)")
    diff: Num = Field(description="acc_b - acc_a")
    a_only: Count = Field(description="questions A answered right and B wrong")
    b_only: Count = Field(description="questions B answered right and A wrong")
    p_mcnemar: Share = Field(description="two-sided exact McNemar p-value of the difference "
                             "(1.0 when the runs never disagree)")


class MCQComparison(Comparison):
    """Two multiple-choice runs compared (``localeval compare``): B minus A accuracy overall
    and per subject, on the questions both answered."""

    a: str = Field(description="run A's folder (the baseline)")
    b: str = Field(description="run B's folder")
    model_a: str | None = Field(description="run A's model")
    model_b: str | None = Field(description="run B's model")
    task: str | None = Field(description="run A's task")
    n_only_a: Count = Field(description="run A's samples outside the comparison: a failed "
                            "request, or a question B did not answer")
    n_only_b: Count = Field(description="run B's samples outside it, the same way round")
    overall: PairedAccuracy = Field(description="every question both runs answered")
    by_subject: dict[str, PairedAccuracy] = Field(description="per subject (sorted)")
