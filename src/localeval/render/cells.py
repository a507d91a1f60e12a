"""How a number, an interval or a model name is written in running text (a caption, a note);
table cells are typed (:mod:`.table`)."""

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


def short_model(name: str) -> str:
    """The last part of a model path or Hub id."""
    return str(name or "(model)").rstrip("/").split("/")[-1]


def distinct_names(names: list[str]) -> dict[str, str]:
    """Each model name as the fewest trailing parts of its path that tell it apart from the
    others ("hf:/path/to/a/model" and "hf:/path/to/b/model" as "a/model" and "b/model")."""
    parts = {n: str(n or "(model)").rstrip("/").split("/") for n in names}
    longest = max((len(p) for p in parts.values()), default=1)
    for keep in range(1, longest + 1):
        shown = {n: "/".join(p[-keep:]) for n, p in parts.items()}
        if len(set(shown.values())) == len(set(names)):
            return shown
    return {n: str(n) for n in names}
