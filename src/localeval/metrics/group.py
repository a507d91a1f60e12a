"""A metric per group: the one group-by every breakdown uses (per subject, language, subset…).

The pattern of inspect_ai's ``grouped(metric, "field")``: records are split by a key, the same
metric is applied to each group, and the answer is keyed like the groups. Records whose key is
None belong to no group (a question without a year is in no year row).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar

R = TypeVar("R")
K = TypeVar("K", bound=Hashable)


def group_by(records: Iterable[R], key: Callable[[R], K | None]) -> dict[K, list[R]]:
    """The records of each key, keys in first-seen order, records in their own order."""
    groups: dict[K, list[R]] = {}
    for record in records:
        k = key(record)
        if k is not None:
            groups.setdefault(k, []).append(record)
    return groups


def grouped(metric: Callable[[list[R]], Any], records: Iterable[R],
            key: Callable[[R], K | None],
            order: Callable[[Iterable[K]], list[K]] = sorted) -> dict[K, Any]:
    """``metric(group)`` for each group of ``records`` by ``key``, keys in ``order`` (sorted)."""
    groups = group_by(records, key)
    return {k: metric(groups[k]) for k in order(groups)}
