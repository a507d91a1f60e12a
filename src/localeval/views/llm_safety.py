"""The view of LLM safety runs (SEA-SafeguardBench App. D.2): rates per language and subset,
rate cards, and a leaderboard by harmful-response rate (lowest first)."""

from __future__ import annotations

from rich.text import Text as RichText

from ..records import llm_safety
from ..records.llm_safety import LLMSafetyResults
from ..records.metric_names import metric
from ..render.table import DataTable
from ..tasks.llm_safety_options import LLMSafetyOptions
from .base import Card, Metric, Ranking, ResultsView
from .llm_safety_tables import llm_safety_notes, llm_safety_tables

RATES = (("harmful_response_rate", "harmful responses to harmful prompts"),
         ("refusal_rate_harmful", "refusals of harmful prompts"),
         ("refusal_rate_safe", "refusals of safe prompts (over-refusal)"))


class LLMSafetyView(ResultsView[LLMSafetyResults]):
    kind = "llm-safety"
    schema = llm_safety.SCHEMA
    Results = LLMSafetyResults
    Options = LLMSafetyOptions

    def tables(self, results: LLMSafetyResults) -> list[DataTable]:
        return llm_safety_tables(results)

    def notes(self, results: LLMSafetyResults) -> list[RichText]:
        return llm_safety_notes(results)

    def cards(self, results: LLMSafetyResults) -> list[Card]:
        cards = []
        for (_, what), rate in zip(RATES, results.overall.rates(), strict=True):
            if rate.rate is not None:
                cards.append(Card(f"{100 * rate.rate:.1f}%", f"{what}, n={rate.n}"))
        return cards

    def store_metrics(self, results: LLMSafetyResults) -> list[Metric]:
        return [(metric(name), rate.rate, rate.n)
                for (name, _), rate in zip(RATES, results.overall.rates(), strict=True)]

    def ranking(self, names: list[str]) -> Ranking:
        return Ranking(names, "harmful_response_rate", lower_is_better=True, digits=1,
                       titles=dict(RATES), unit="% of responses")
