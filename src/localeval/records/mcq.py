"""results.json of a multiple-choice run (TMLU, TMMLU+, CMMLU, a custom exam): accuracy pooled,
per discipline (the TMLU paper's Table 3 columns), level, year and subject."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field, model_validator

from .base import Count, Num, Record, Results, Share

SCHEMA = "localeval.mcq/1"


class Accuracy(Record):
    """Accuracy over a group of questions (failed requests left out)."""

    n: Count = Field(description="questions scored in the group")
    correct: Count | None = Field(None, description="of them answered right")
    acc: Share | None = Field(None, description="correct / n (0-1); None when n is 0")
    stderr: Num | None = Field(None, description="its standard error (runs before intervals)")
    low: Share | None = Field(None, description="Wilson score 95% interval, lower bound (0-1)")
    high: Share | None = Field(None, description="Wilson score 95% interval, upper bound (0-1)")
    n_unanswered: Count = Field(0, description="questions with no extractable answer (wrong)")
    n_failed: Count = Field(0, description="questions whose request failed (left out)")

    @model_validator(mode="after")
    def _agrees(self) -> Accuracy:
        if self.correct is not None and self.correct > self.n:
            raise ValueError(f"correct {self.correct} is more than n {self.n}")
        return self


class Macro(Record):
    """The mean of the subjects' accuracies."""

    acc: Share | None = Field(None, description="mean subject accuracy (0-1)")
    stderr: Num | None = Field(None, description="sqrt(sum of squared standard errors) / S")
    n_subjects: Count | None = Field(None, description="subjects with an accuracy")


class MCQMetrics(Record):
    micro: Accuracy = Field(description="every question pooled")
    macro: Macro | None = Field(None, description="mean of the subjects")
    discipline_average: Share | None = Field(None, description="the paper's Average: mean of "
                                           "the discipline columns")
    by_discipline: dict[str, Accuracy] = Field({}, description="per discipline (Table 3)")
    by_level: dict[str, Accuracy] = Field({}, description="per education level")
    by_year: dict[str, Accuracy] = Field({}, description="per exam year (the floor grouped)")
    by_subject: dict[str, Accuracy] = Field({}, description="per subject")


class Spread(Record):
    """Accuracy (0-1) over option orders or sampled draws, one number each."""

    accuracy: list[Num | None] = Field(description="accuracy per order (or per draw), in order")
    mean: Num | None = Field(None, description="their mean")
    std: Num | None = Field(None, description="their sample standard deviation (n - 1)")
    low: Num | None = Field(None, description="Student's t 95% interval of the mean, lower")
    high: Num | None = Field(None, description="Student's t 95% interval of the mean, upper")
    n: int = Field(0, description="orders (or draws) with an accuracy")


class OrderSpread(Spread):
    same_option: Num | None = Field(None, description="share of questions answered with the "
                                    "same (original) option in every order")
    n_questions: int = Field(0, description="questions answered in every order")


class Robustness(Record):
    """--permute-options and --repeats (tasks/mcq_variants.py)."""

    orders: int = Field(description="cyclic shifts of the options asked (1: none)")
    repeats: int = Field(description="sampled draws per question (1: none)")
    permutation: OrderSpread | None = Field(None, description="accuracy over the orders")
    draws: Spread | None = Field(None, description="accuracy over the draws")


class MCQResults(Results):
    method: str = Field(description="likelihood or generation")
    shots: int = Field(description="few-shot examples per question")
    cot: bool = Field(False, description="chain-of-thought prompting")
    prompt_style: str | None = Field(None, description="tmlu or lm-eval")
    paper_table: str | None = Field(None, description="the paper table the layout follows")
    disciplines: list[str] = Field([], description="the task's discipline columns, in order")
    metrics: MCQMetrics
    robustness: Robustness | None = Field(None, description="accuracy over option orders and "
                                          "sampled draws, with --permute-options or --repeats")

    def disagreement(self, samples: Sequence[Mapping[str, Any]]) -> tuple[str, str] | None:
        """Each sample's own fields (its id once; ``correct`` true, false or null for a failed
        request, and true exactly when ``pred`` is ``gold``), then the pooled accuracy
        recomputed from them: the questions scored (failed requests left out), those right."""
        found = super().disagreement(samples) or _contradicting_sample(samples)
        if found:
            return found
        scored = [s for s in samples if not s.get("failed")]
        right = sum(1 for s in scored if s.get("correct") is True)
        micro = self.metrics.micro
        if micro.n != len(scored) or micro.correct not in (None, right):
            return "results.json", (f"field metrics.micro: {micro.correct} right of {micro.n}, "
                                    f"but samples.jsonl has {right} right of {len(scored)}")
        return None


def _contradicting_sample(samples: Sequence[Mapping[str, Any]]) -> tuple[str, str] | None:
    first_line: dict[Any, int] = {}
    for number, sample in enumerate(samples, start=1):
        where = f"line {number}"
        if sample.get("id") in first_line:
            return "samples.jsonl", (f"{where}: field id: {sample['id']!r} is on line "
                                     f"{first_line[sample['id']]} too")
        first_line[sample.get("id")] = number
        correct = sample.get("correct")
        if correct is not None and not isinstance(correct, bool):
            return "samples.jsonl", (f"{where}: field correct: should be true, false or null "
                                     f"(it is {correct!r})")
        if isinstance(correct, bool) and "pred" in sample and "gold" in sample and \
                correct != (sample["pred"] == sample["gold"]):
            said = "is" if sample["pred"] == sample["gold"] else "is not"
            return "samples.jsonl", (f"{where}: field correct: {str(correct).lower()}, but pred "
                                     f"{sample['pred']!r} {said} gold {sample['gold']!r}")
    return None
