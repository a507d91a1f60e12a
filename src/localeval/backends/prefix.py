"""Find groups of token sequences that share a long common prefix, so it is forwarded once.

Works on token ids, never strings: the prefix is exactly what the model would have seen had each
sequence been forwarded alone, so tokenisation across the prefix/suffix boundary cannot change.

Plan: sort the sequences; neighbours in sorted order share the longest prefixes. A run of
sequences is split at its weakest link (smallest neighbour LCP ``m``) into sub-runs with longer
prefixes ``m_k`` when that forwards fewer tokens. Forwarding a group with prefix ``p`` costs
``p + sum(len_i - p)``; splitting into ``K`` sub-runs of sizes ``n_k`` saves
``sum_k (n_k - 1)(m_k - m) - (K - 1) m`` tokens; each extra group also has a fixed cost of
``GROUP_COST`` tokens (its own prefix pass, and batches of its own that hold fewer rows), so we
split exactly when the saving exceeds ``(K - 1) * GROUP_COST``. Without that cost a guard that
sends several templates per item (ShieldGemma per policy: preamble, item, then one guideline
each) was split into one group per item, saving a few tokens each while forwarding every item's
four rows in a batch of their own (bench/guard_items_per_second.py, 100 XSTest prompts on a
2-core CPU: 195 s per item, 81 s as one group, at 0.92 and 0.83 of the unique-token bound). A
prefix tree that forwards the items of one level together would have both; not done yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

GROUP_COST = 64  # tokens: what a group of its own costs beyond the tokens it forwards


@dataclass(frozen=True)
class PrefixGroup:
    prefix_len: int  # tokens shared by every member; 0 means "no reuse"
    members: list[int]  # indices into the input list


def common_prefix_len(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def plan_prefix_groups(seqs: Sequence[Sequence[int]], min_prefix: int = 16) -> list[PrefixGroup]:
    """Partition ``seqs`` into groups, each with the prefix its members share.

    The prefix is capped at ``len - 1`` of the shortest member so every member keeps at least
    one token of its own (the position whose next-token distribution we read).
    Groups whose prefix is shorter than ``min_prefix`` (or that have one member) get
    ``prefix_len = 0``: not worth a separate forward pass.
    """
    if not seqs:
        return []
    order = sorted(range(len(seqs)), key=lambda i: tuple(seqs[i]))
    links = [common_prefix_len(seqs[a], seqs[b]) for a, b in zip(order, order[1:])]
    groups: list[PrefixGroup] = []

    stack = [(0, len(order))]  # runs order[lo:hi]; links[lo:hi-1] lie between their members
    while stack:
        lo, hi = stack.pop()
        members = order[lo:hi]
        if hi - lo == 1:
            groups.append(PrefixGroup(0, members))
            continue
        inner = links[lo : hi - 1]
        m = min(inner)
        cuts = [lo] + [lo + j + 1 for j, v in enumerate(inner) if v == m] + [hi]
        if len(cuts) > 2:
            parts = list(zip(cuts, cuts[1:]))
            gain = -(len(parts) - 1) * (m + GROUP_COST)
            for a, b in parts:
                if b - a > 1:
                    gain += (b - a - 1) * (min(links[a : b - 1]) - m)
            if gain > 0:
                stack.extend(parts)
                continue
        shortest = min(len(seqs[i]) for i in members)
        p = min(m, shortest - 1)
        groups.append(PrefixGroup(p if p >= min_prefix else 0, members))
    return groups
