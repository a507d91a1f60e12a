"""The offline demo: a random model, the MCQ flow and the safety flow on bundled sample data."""

from .run import run_demo

__all__ = ["run_demo"]
