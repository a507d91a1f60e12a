"""A metric per group: the one group-by every breakdown uses (per subject, language, subset…).

The pattern of inspect_ai's ``grouped(metric, "field")``: records are split by a key, the same
metric is applied to each group, and the answer is keyed like the groups. Records whose key is
None belong to no group (a question without a year is in no year row).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any, Protocol, TypeVar


class SortableKey(Hashable, Protocol):
    """A group's key as :func:`grouped` needs it: a dict key, and ordered (its default order
    is ``sorted``)."""

    def __lt__(self, other: Any, /) -> bool: ...


R = TypeVar("R")  # a record
V = TypeVar("V")  # a metric's value
K = TypeVar("K", bound=Hashable)
SK = TypeVar("SK", bound=SortableKey)


def group_by(records: Iterable[R], key: Callable[[R], K | None]) -> dict[K, list[R]]:
    """The records of each key, keys in first-seen order, records in their own order."""
    groups: dict[K, list[R]] = {}
    for record in records:
        k = key(record)
        if k is not None:
            groups.setdefault(k, []).append(record)
    return groups


def grouped(metric: Callable[[list[R]], V], records: Iterable[R],
            key: Callable[[R], SK | None],
            order: Callable[[Iterable[SK]], list[SK]] = sorted) -> dict[SK, V]:
    """``metric(group)`` for each group of ``records`` by ``key``, keys in ``order`` (sorted)."""
    groups = group_by(records, key)
    return {k: metric(groups[k]) for k in order(groups)}
