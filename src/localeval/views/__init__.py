"""Results views: one per kind of task, found by the schema of its results
(:func:`localeval.views.registry.view_for`). See :mod:`.base`."""

from .base import Card, Metric, Ranking, ResultsView

__all__ = ["Card", "Metric", "Ranking", "ResultsView"]
