"""localeval: evaluate LLMs and safeguards in the languages and cultures English benchmarks miss.

``evaluate``, ``load_results``, ``load_run_state`` and ``RunRecord`` are imported when first
used, so the command line (which imports this package first) starts without the API's
imports."""

from typing import TYPE_CHECKING, Any

from .version import __version__

if TYPE_CHECKING:  # what the names are to a type checker (a user's too); imported when used
    from .api import evaluate, load_results, load_run_state
    from .store.runs import RunRecord

__all__ = ["RunRecord", "evaluate", "load_results", "load_run_state", "__version__"]


def __getattr__(name: str) -> Any:
    if name in ("evaluate", "load_results", "load_run_state"):
        from . import api

        return getattr(api, name)
    if name == "RunRecord":
        from .store.runs import RunRecord

        return RunRecord
    raise AttributeError(f"module 'localeval' has no attribute {name!r}")
