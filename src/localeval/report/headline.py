"""A run's headline numbers as summary cards (the report's first section, and the comparison
table of several runs): the view's own cards, then the sample counts every run has. They only
read the run's typed results."""

from __future__ import annotations

from ..records import Results
from ..render.cards import Card
from ..views.registry import view_for


def headline(results: Results) -> list[Card]:
    """(value, what it is, whether it is bad news) cards for the summary."""
    cards = list(view_for(results).cards(results))
    cards.append(Card(str(results.n_samples), "samples"))
    cards.append(Card(str(results.n_failed), "failed (left out, never counted as right or "
                      "safe)", results.n_failed > 0))
    if results.unanswered:
        cards.append(Card(str(len(results.unanswered)), "unanswered (no extractable "
                          "answer, counted wrong)", True))
    if results.cost is not None:
        cards.append(Card(f"{results.cost.total:.4f}", f"cost of the {results.cost.role}'s "
                          f"tokens at {results.cost.price_in or 0:g} in, {results.cost.price_out or 0:g}"
                          f" out per {results.cost.per}"))
    return cards
