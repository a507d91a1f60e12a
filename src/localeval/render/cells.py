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
    others ("hf:/path/to/a/model" and "hf:/path/to/b/model" as "a/model" and "b/model"), one
    rule for every name: the parts are the path's alone (never the spec's "hf:/"), and the kind
    is named ("hf:m", "vllm:m") only where the names have more than one kind."""
    def kind_and_parts(name: str) -> tuple[str, list[str]]:
        kind, colon, target = str(name or "(model)").partition(":")
        if not colon or "/" in kind:  # a bare path or name, no backend kind
            kind, target = "", str(name or "(model)")
        return kind, [p for p in target.split("/") if p] or [target]

    split = {n: kind_and_parts(n) for n in names}
    named_kind = len({kind for kind, _ in split.values()}) > 1
    longest = max((len(p) for _, p in split.values()), default=1)
    for keep in range(1, longest + 1):
        shown = {n: (f"{kind}:" if named_kind and kind else "") + "/".join(p[-keep:])
                 for n, (kind, p) in split.items()}
        if len(set(shown.values())) == len(set(names)):
            return shown
    return {n: str(n) for n in names}
