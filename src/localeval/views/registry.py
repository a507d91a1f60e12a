"""The table of views: which view shows results of which schema. Views are imported plainly
here, so the import graph is what runs; the task table (``tasks/registry.py``) says which task
names are of which kind, and so which schema a task's results have."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import LocalevalError
from ..records import Results
from ..tasks.registry import plugin_tasks, task_class
from .base import ResultsView
from .contamination import ContaminationView
from .llm_safety import LLMSafetyView
from .mcq import MCQView
from .safety import SafetyView

VIEWS: dict[str, type[ResultsView[Any]]] = {
    view.schema: view for view in (MCQView, SafetyView, LLMSafetyView, ContaminationView)}


def view_for_schema(schema: str | None) -> ResultsView[Any]:
    """The view of results with ``schema``; one clear error for a schema no view reads."""
    view = VIEWS.get(schema or "") or _plugin_view(schema)
    if view is None:
        raise LocalevalError(f"results with schema {schema!r} are of no task kind this "
                             f"localeval knows ({', '.join(VIEWS)}); were they written by "
                             "another version?")
    return view()


def view_for(results: Results) -> ResultsView[Any]:
    """The view of the task kind whose results these are."""
    return view_for_schema(results.schema_)


def view_for_task(name: str) -> ResultsView[Any]:
    """The view of the task ``name`` (a custom name is a multiple-choice task)."""
    return view_for_schema(task_class(name).results_schema)


def _plugin_view(schema: str | None) -> type[ResultsView[Any]] | None:
    """The view a task of another package brings for its results' schema (its class is
    imported only here, for a schema no built-in view reads)."""
    for kind in plugin_tasks():
        cls = kind.cls
        if cls.results_schema == schema and cls.view is not None:
            if not issubclass(cls.view, ResultsView):
                raise LocalevalError(f"task {kind.part.name!r} (from {kind.part.origin}): its "
                                     "view is not a localeval ResultsView subclass")
            return cls.view
    return None


def protocol_facts(task: str, schema: str, config: dict[str, Any]) -> dict[str, str]:
    """The protocol facts the leaderboard compares, for the store's run summary
    (``store.results_db.ProtocolOf``): the task's view's, else its results schema's view's (a
    task this localeval no longer knows), else none."""
    finders: tuple[Callable[[], ResultsView[Any]], ...] = (
        lambda: view_for_task(task), lambda: view_for_schema(schema))
    for view in finders:
        try:
            return view().protocol(config)
        except LocalevalError:
            continue
    return {}
