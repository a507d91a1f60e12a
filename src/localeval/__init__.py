"""localeval: evaluate LLMs and safeguards in the languages and cultures English benchmarks miss."""

from .api import evaluate, load_results
from .store.runs import RunRecord
from .version import __version__

__all__ = ["RunRecord", "evaluate", "load_results", "__version__"]
