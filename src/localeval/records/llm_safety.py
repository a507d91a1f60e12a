"""results.json of an LLM safety run (SEA-SafeguardBench App. D.2): how often a model's own
responses are harmful or refusals, per language and subset, and the D.2 layout."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field, JsonValue

from ..choices import Refine, Refusal, SafeguardMode
from .base import Count, Record, Results, Sample, Share

SCHEMA = "localeval.llm-safety/1"


class Rate(Record):
    """A share of responses with its Wilson score 95% interval."""

    n: Count = Field(description="responses the rate is over")
    rate: Share | None = Field(default=None, description="the share (0-1); None when n is 0")
    low: Share | None = Field(default=None, description="interval lower bound (None: --bootstrap 0)")
    high: Share | None = Field(default=None, description="interval upper bound")


class Rates(Record):
    """The three rates of a group of responses."""

    n: Count = Field(description="responses in the group")
    n_failed: Count = Field(default=0, description="responses whose request failed (left out)")
    n_refusal_unknown: Count = Field(default=0, description="responses no refusal reading could tell")
    harmful_response_rate: Rate = Field(description="harmful responses to harmful prompts")
    refusal_rate_harmful: Rate = Field(description="refusals of harmful prompts")
    refusal_rate_safe: Rate = Field(description="refusals of safe prompts (over-refusal)")

    def rates(self) -> tuple[Rate, Rate, Rate]:
        """The three rates in the tables' order: harmful responses, refusals of harmful
        prompts, refusals of safe prompts."""
        return self.harmful_response_rate, self.refusal_rate_harmful, self.refusal_rate_safe


class GoldRates(Record):
    refusal: Rate = Field(description="refused, of the responses to prompts of this label")
    safe_response: Rate = Field(description="judged safe, of those responses")


class D2Row(Record):
    subset: str
    side: str = Field(description="en or sea")
    rates: dict[str, GoldRates] = Field(description="per gold label of the prompt")


class D2Table(Record):
    """The authors' App. D.2 layout."""

    rows: list[D2Row] = []
    average: dict[str, dict[str, dict[str, Share]]] = Field(
        default={}, description="side -> gold label -> rate name -> mean over subsets")
    rounding: str = Field(default="none", description="none, or iris: each cell rounded to 0.1 points "
                          "before the mean")


class Safeguard(Record):
    """App. D.2's variant with a safeguard (tasks/llm_safeguarded.py): which prompt guard, and
    what it did."""

    name: str = Field(description="the prompt guard (a --guard name)")
    options: dict[str, Any] = Field(default={}, description="its options")
    model: JsonValue = Field(default=None, description="its model")
    mode: SafeguardMode = Field(description="fixed-answer (IRIS's refusal for a prompt it calls harmful) "
                      "or advance-inform (a system warning before it)")
    refine: Refine = Field(default="none", description="harmful responses refined: none, iris (dropped "
                        "when the prompt was called harmful) or all")
    label_scores: str | None = Field(default=None, description="how its label log-probs became scores")
    verdict_position: str | None = Field(default=None, description="where its verdict was read: "
                                         "first-label, fixed, or None (its authors' one "
                                         "position)")


class LLMSafetyResults(Results):
    judge: str = Field(description="the guard judging each response")
    threshold: Share = Field(description="harmful = the judge's P(harmful) above this")
    refusal: Refusal = Field(default="detector", description="how refusals were found: judge or detector")
    responses_per_prompt: int | None = Field(default=1, description="responses drawn per prompt")
    overall: Rates = Field(description="every response")
    by_lang: dict[str, Rates] = Field(default={}, description="per language")
    by_subset: dict[str, Rates] = Field(default={}, description="per subset")
    d2: D2Table | None = Field(default=None, description="App. D.2's layout")
    safeguard: Safeguard | None = Field(default=None, description="App. D.2's safeguard variant "
                                        "(None: the model alone)")
    n_dropped: Count = Field(default=0, description="responses the authors' refine step keeps none of "
                           "(refine=iris), out of every rate")

    def disagreement(self, samples: Sequence[Sample]) -> tuple[str, str] | None:
        """The samples counted as the rates count them: ``n_samples`` the samples not dropped
        (IRIS's refine step kept no response), ``n_dropped`` the others, ``n_failed`` the
        failed among those kept. The rates themselves are recomputed a layer above
        (:func:`localeval.analysis.agreement.disagreement`)."""
        kept = [s for s in samples if not s.get("dropped")]
        if self.n_samples != len(kept):
            dropped = " not dropped" if len(kept) < len(samples) else ""
            return "results.json", (f"field n_samples: {self.n_samples}, but samples.jsonl has "
                                    f"{len(kept)}{dropped}")
        if "n_dropped" in self and self.n_dropped != len(samples) - len(kept):
            return "results.json", (f"field n_dropped: {self.n_dropped}, but samples.jsonl has "
                                    f"{len(samples) - len(kept)} dropped")
        failed = sum(1 for s in kept if s.is_failed)
        if "n_failed" in self and self.n_failed != failed:
            return "results.json", (f"field n_failed: {self.n_failed}, but samples.jsonl has "
                                    f"{failed} failed")
        return None
