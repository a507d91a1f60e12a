"""A headline number as a summary card: the report's first section and the comparison table of
several runs show them."""

from __future__ import annotations

from typing import NamedTuple


class Card(NamedTuple):
    value: str  # the number as shown ("58.6", "80.00%")
    label: str  # what it is ("PR-AUC, prompts, n=40")
    bad: bool = False  # bad news (failed samples)
