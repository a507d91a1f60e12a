"""How a number or a model name is written in a table cell, for every report table."""

from __future__ import annotations

from typing import Any


def num(value: Any, scale: float = 1.0, digits: int = 1) -> str:
    """``value * scale`` with ``digits`` decimals; "-" for a missing value."""
    return "-" if value is None else f"{value * scale:.{digits}f}"


def short_model(name: str) -> str:
    """The last part of a model path or Hub id."""
    return str(name or "(model)").rstrip("/").split("/")[-1]
