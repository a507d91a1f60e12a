"""How the command line's text becomes values that no declaration types: comma-separated lists.
A ``KEY=VALUE`` option's value is parsed by the type its option declares
(:mod:`localeval.declared`)."""

from __future__ import annotations


def comma_list(value: str | None) -> list[str] | None:
    """A comma-separated option as a list (None when empty)."""
    return [v.strip() for v in value.split(",") if v.strip()] if value else None
