"""A run's headline numbers as summary cards (the report's first section, and the comparison
table of several runs): the view's own cards, then the sample counts every run has. They only
read results.json."""

from __future__ import annotations

Card = tuple[str, str, bool]  # (value, what it is, whether it is bad news)


def headline(results: dict) -> list[Card]:
    """(value, what it is, whether it is bad news) cards for the summary."""
    from ..tasks.registry import view_for

    cards = list(view_for(results).cards(results))
    failed = results.get("n_failed", 0)
    cards.append((str(results.get("n_samples", 0)), "samples", False))
    cards.append((str(failed), "failed (left out, never counted as right or safe)", failed > 0))
    if results.get("unanswered"):
        cards.append((str(len(results["unanswered"])), "no extractable answer (wrong)", True))
    return cards
