"""How a number or a model name is written in a table cell, for every report table."""

from __future__ import annotations

from typing import Any


def num(value: Any, scale: float = 1.0, digits: int = 1) -> str:
    """``value * scale`` with ``digits`` decimals; "-" for a missing value."""
    return "-" if value is None else f"{value * scale:.{digits}f}"


def interval(low: Any, high: Any, scale: float = 100.0, digits: int = 1) -> str:
    """A stored interval as "[low, high]" (times ``scale``); "-" when the run has none."""
    if low is None or high is None:
        return "-"
    return f"[{num(low, scale, digits)}, {num(high, scale, digits)}]"


# The bars of a sparkline (a histogram in one cell, lowest first). Only the console and
# Markdown show them: LaTeX and CSV leave such a column out (export.py).
SPARK_BARS = " ▁▂▃▄▅▆▇█"


def short_model(name: str) -> str:
    """The last part of a model path or Hub id."""
    return str(name or "(model)").rstrip("/").split("/")[-1]
