"""Plan which token prefixes to forward once: a prefix tree over every request's tokens.

Works on token ids, never strings: a prefix is exactly what the model would have seen had each
sequence been forwarded alone, so tokenisation across a prefix/suffix boundary cannot change.

The tree (a radix tree, built from the sorted sequences and their neighbours' common-prefix
lengths in one pass) has a node for every prefix shared by two or more sequences, and a leaf for
every distinct sequence. A guard's requests give three levels (a shared preamble, then each
item, then one row per policy or stage: ShieldGemma per policy, a two-stage guard's verdict
after its own generated lines); a subject's few-shot block gives two (the block, then each
question). :mod:`.tree` forwards each node's tokens once, in batches of nodes of one level.

Not every shared prefix pays. Keeping a node whose ``s`` tokens lead to ``k`` rows (children,
plus one when a sequence ends there) forwards them once instead of ``k`` times, saving
``(k - 1) s`` tokens. It costs a level: the node's own padding to a WIDTH_BLOCK multiple, up to as
many masked cache columns in every row below it, and the gather of its cache rows for its
children. So a node is kept only when it saves more than ``NODE_COST`` tokens; otherwise its
tokens are forwarded by each of its children (two XSTest prompts that both open with "How do I"
share three tokens, and would cost more as a level of their own than they save).

Generation adds a cost. Rows decode together only when their caches have the same columns, so
every kept node may leave a decode batch of its own behind, up to ``max_tokens`` more decode
steps; a step costs about ``STEP_COST`` tokens of prefill (2-core CPU, 4-layer SmolLM2 shape:
~22 ms a step against ~0.3 ms a prompt token, so ~70; on a GPU a step is dearer still). So under
generation a node must also save ``STEP_COST x max_tokens``: a subject's few-shot block, shared
by dozens of questions, does; WildGuard's prompt shared by three XSTest responses does not (kept,
it split 233 rows into 56 decode batches, 1,736 steps and 76 s against 310 steps and 51 s
with no prefix reuse at all).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

NODE_COST = 16  # tokens: what a level of its own costs beyond the tokens it forwards
STEP_COST = 64  # tokens: what one more decode step costs, in prompt tokens forwarded


@dataclass
class PrefixNode:
    """The prefix ``seqs[source][:depth]``; its own tokens start where its parent's end."""

    depth: int
    source: int  # a sequence passing through this node, to read its tokens from
    children: list[PrefixNode] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)  # the sequences that are exactly this prefix


def common_prefix_len(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def plan_prefix_tree(seqs: Sequence[Sequence[int]], node_cost: float = NODE_COST,
                     extra: Sequence[float] | None = None) -> PrefixNode:
    """The root (depth 0, nothing to forward) of the tree over ``seqs``; every index of
    ``seqs`` is in exactly one node's ``ends``. A node is kept when it saves more than
    ``node_cost`` plus the largest ``extra[i]`` of the sequences below it (generation: the
    decode steps of the batch of its own it may leave behind). ``node_cost=math.inf`` gives a
    flat tree: one leaf per distinct sequence, no prefix forwarded once."""
    root = _radix_tree(seqs)
    _drop_unpaid_nodes(root, node_cost, extra or [0.0] * len(seqs))
    return root


def _radix_tree(seqs: Sequence[Sequence[int]]) -> PrefixNode:
    """In sorted order each sequence branches off the rightmost path of the tree built so far,
    at its common prefix with the sequence before it."""
    root = PrefixNode(0, -1)
    path = [root]  # the rightmost path, root first
    before = None
    for i in sorted(range(len(seqs)), key=lambda i: tuple(seqs[i])):
        seq = seqs[i]
        shared = common_prefix_len(seqs[before], seq) if before is not None else 0
        last = None
        while path[-1].depth > shared:
            last = path.pop()
        if path[-1].depth < shared:  # branch in the middle of the edge to ``last``
            assert last is not None  # the node below the branch point was just popped
            branch = PrefixNode(shared, i, [last])
            path[-1].children[-1] = branch
            path.append(branch)
        if len(seq) == path[-1].depth:
            path[-1].ends.append(i)
        else:
            leaf = PrefixNode(len(seq), i, ends=[i])
            path[-1].children.append(leaf)
            path.append(leaf)
        before = i
    return root


def _drop_unpaid_nodes(root: PrefixNode, node_cost: float, extra: Sequence[float]) -> None:
    """Children before parents (reverse pre-order), so a node's row count is final when it is
    judged: a dropped node's children become its parent's, and its ends a leaf of their own."""
    order, stack = [], [root]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(node.children)
    below: dict[int, float] = {}  # id(node) -> the largest extra of the sequences below it
    for node in reversed(order):
        kept = []
        for child in node.children:
            rows = len(child.children) + bool(child.ends)
            cost = node_cost + below[id(child)]
            if child.children and (rows - 1) * (child.depth - node.depth) <= cost:
                kept.extend(child.children)
                if child.ends:
                    kept.append(PrefixNode(child.depth, child.source, ends=child.ends))
                    below[id(kept[-1])] = max(extra[j] for j in child.ends)
            else:
                kept.append(child)
        node.children = kept
        below[id(node)] = max([extra[j] for j in node.ends] +
                              [below[id(c)] for c in node.children], default=0.0)


def forwarded_tokens(root: PrefixNode) -> int:
    """Tokens the tree forwards: each node's own tokens once."""
    total, stack = 0, [root]
    while stack:
        node = stack.pop()
        total += sum(c.depth - node.depth for c in node.children)
        stack.extend(node.children)
    return total
