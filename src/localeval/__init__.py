"""localeval: evaluate LLMs and safeguards in the languages and cultures English benchmarks miss."""

__version__ = "0.1.0"

from .api import evaluate, load_results  # noqa: E402

__all__ = ["evaluate", "load_results", "__version__"]
