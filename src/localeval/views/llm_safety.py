"""The view of LLM safety runs (SEA-SafeguardBench App. D.2): rates per language and subset,
rate cards, and a leaderboard by harmful-response rate (lowest first)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ..report.llm_safety_tables import llm_safety_tables, print_llm_safety_report
from .base import Card, Metric, Ranking, ResultsView

RATES = (("harmful_response_rate", "harmful responses to harmful prompts"),
         ("refusal_rate_harmful", "refusals of harmful prompts"),
         ("refusal_rate_safe", "refusals of safe prompts (over-refusal)"))


class LLMSafetyView(ResultsView):
    kind = "llm-safety"

    def tables(self, results: dict) -> list[Table]:
        return llm_safety_tables(results)

    def print(self, results: dict, console: Console) -> None:
        print_llm_safety_report(results, console)

    def cards(self, results: dict) -> list[Card]:
        overall = results.get("overall") or {}
        cards = []
        for key, what in RATES:
            rate = overall.get(key) or {}
            if rate.get("rate") is not None:
                cards.append((f"{100 * rate['rate']:.1f}%", f"{what}, n={rate['n']}", False))
        return cards

    def store_metrics(self, results: dict) -> list[Metric]:
        overall = results.get("overall") or {}
        return [(name, overall[name]["rate"], overall[name]["n"]) for name, _ in RATES
                if name in overall]

    def ranking(self, names: list[str]) -> Ranking:
        return Ranking(names, "harmful_response_rate", lower_is_better=True, digits=1,
                       titles=dict(RATES), unit="% of responses")
