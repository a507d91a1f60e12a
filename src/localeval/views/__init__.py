"""Results views: one per kind of task, found through the task registry
(:func:`localeval.tasks.registry.view_for`). See :mod:`.base`."""

from .base import Card, Metric, Ranking, ResultsView

__all__ = ["Card", "Metric", "Ranking", "ResultsView"]
