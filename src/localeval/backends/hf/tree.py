"""Forward a prefix tree (:mod:`.prefix`) on a local model: every node's tokens once, the nodes
of one level together in batches, each batch continuing its parents' KV cache rows.

Depth first, one batch at a time: a batch of nodes is forwarded, handed to the caller (who reads
the log-probs of the requests ending there, or decodes from them), then its children are
forwarded in batches of their own, each gathering its parents' rows from this batch's cache.
So only the batches on the path from the root are held, and ShieldGemma's four policy rows of
a hundred items are forwarded as a few wide batches, not a hundred narrow ones.

Why a row's numbers do not depend on its batch: a node's tokens are padded to a width set by
the node alone (a multiple of WIDTH_BLOCK; longer for a generation's last prompt tokens, see
:func:`.generate.row_width`), and nodes share a batch only at equal widths, so a row's cache
has the same columns, pads included (masked out; position ids skip them), whatever else is in
its batch or at its parents' level.

Models with sliding-window layers keep only the window's last columns in their caches, so pads
inside the window would change what a row sees: their requests are forwarded whole (a flat
tree, right-padded), unless every row's columns fit in the window, where a sliding layer sees
all of them (ShieldGemma's 4,096-token window holds its prompts: it gets the tree).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .kv_cache import cache_argument, returned_cache
from .prefix import NODE_COST, PrefixNode, plan_prefix_tree
from .row_blocks import dense_row_blocks, gathered_cache, only_positions, pad_rows, padded

if TYPE_CHECKING:
    import torch
    from transformers import Cache, PretrainedConfig

    from .local_model import LocalModel


@dataclass
class Rows:
    """A forwarded batch, a row per node: its KV cache, which cache columns hold real tokens
    (``mask`` [rows, columns]), and the position each row's next token takes."""

    cache: Cache
    mask: torch.Tensor
    next_position: torch.Tensor

    def gather(self, index: torch.Tensor) -> Rows:
        """Rows ``index`` (a tensor; repeats allowed) in a cache of their own."""
        return Rows(gathered_cache(self.cache, index), self.mask[index],
                    self.next_position[index])


@dataclass
class Batch:
    """What :func:`walk` yields: the nodes forwarded together, their rows, and the logits (float,
    [rows, vocab]) at each row's last real token."""

    nodes: list[PrefixNode]
    rows: Rows
    logits: torch.Tensor


Width = Callable[[PrefixNode, int], int]  # (node, its own token count) -> its padded width
Grow = Callable[[PrefixNode], int]  # node -> the cache columns its requests' generation adds


def _block(_node: PrefixNode, n: int) -> int:
    return padded(n)


def plan(backend: LocalModel, seqs: Sequence[Sequence[int]], width: Width | None = None,
         grow: Grow = lambda _n: 0,
         extra: Sequence[float] | None = None) -> PrefixNode:
    """The tree to forward: the planner's (``extra``: see :func:`.prefix.plan_prefix_tree`), or
    a flat one (each sequence whole) when prefix reuse is off or a sliding window could not hold
    every row's columns (``grow``: generation's)."""
    if not backend.prefix_reuse:
        return plan_prefix_tree(seqs, math.inf)
    tree = plan_prefix_tree(seqs, NODE_COST, extra)
    return tree if fits_window(backend, tree, width, grow) else plan_prefix_tree(seqs, math.inf)


def fits_window(backend: LocalModel, root: PrefixNode, width: Width | None = None,
                grow: Grow = lambda _n: 0) -> bool:
    """Whether every row's cache columns (pads and ``grow`` included) fit in the model's sliding
    window, where a sliding layer sees them all (true for models without one)."""
    window = sliding_window(backend.config)
    return not window or _widest(root, width or _block, grow) < window - 1


def sliding_window(config: PretrainedConfig) -> int | None:
    """The model's sliding window, when any of its layers has one."""
    window: int | None = getattr(config, "sliding_window", None)
    if "sliding_attention" in (getattr(config, "layer_types", None) or ()):
        return window or 1
    return window if window and getattr(config, "use_sliding_window", True) else None


def walk(backend: LocalModel, root: PrefixNode, seqs: Sequence[Sequence[int]],
         width: Width | None = None, grow: Grow = lambda _n: 0,
         needed: Sequence[bool] | None = None) -> Iterator[Batch]:
    """Every node below ``root`` forwarded, parents first. ``width`` pads a node's tokens
    (WIDTH_BLOCK multiples by default); ``grow`` is the cache room a node's requests will add
    (generation), counted in the token budget. A batch's rows stay valid after the next yield:
    gather them before writing to their cache.

    ``needed`` (a flag per sequence; default all): a resumed run plans the same tree over every
    request, cached ones too, and forwards only the batches on the way to a needed one. Each
    batch it forwards is the clean run's, whole: the same nodes split at the same points, in
    the same company, so every row's arithmetic is the clean run's, bit for bit."""
    # Beyond a sliding window, right padding keeps each real token's window free of pads
    side = backend.padding_side if fits_window(backend, root, width, grow) else "right"
    wanted = None if needed is None or all(needed) else _wanted(root, needed)
    yield from _descend(backend, seqs, None, [root], width or _block, grow, side, wanted)


def _wanted(root: PrefixNode, needed: Sequence[bool]) -> set[int]:
    """The ids of the nodes with a needed sequence at or below them."""
    order, stack = [], [root]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(node.children)
    wanted: set[int] = set()
    for node in reversed(order):  # children before parents
        if any(needed[j] for j in node.ends) or any(id(c) in wanted for c in node.children):
            wanted.add(id(node))
    return wanted


def _descend(backend: LocalModel, seqs: Sequence[Sequence[int]], parents: Rows | None,
             parent_nodes: list[PrefixNode], width: Width, grow: Grow, side: str,
             wanted: set[int] | None = None) -> Iterator[Batch]:
    columns = 0 if parents is None else parents.mask.shape[1]
    for picks, nodes, w in _batches(backend, parent_nodes, columns, width, grow):
        if wanted is not None and not any(id(node) in wanted for node in nodes):
            continue  # every request at or below it is in the cache: nothing to forward
        batch = _forward(backend, seqs, parents, [parent_nodes[r].depth for r in picks],
                         picks, nodes, w, side)
        yield batch
        if any(node.children for node in nodes):
            yield from _descend(backend, seqs, batch.rows, nodes, width, grow, side, wanted)


def _batches(backend: LocalModel, parent_nodes: list[PrefixNode], columns: int, width: Width,
             grow: Grow) -> Iterator[tuple[list[int], list[PrefixNode], int]]:
    """(parent rows, nodes, width) for every child of ``parent_nodes``: equal widths together,
    widest first, as many rows as the token budget allows for their cache (the parents'
    columns, their own width and what generation will add)."""
    buckets: dict[int, list[tuple[int, PrefixNode]]] = {}
    for r, parent in enumerate(parent_nodes):
        for child in parent.children:
            w = width(child, child.depth - parent.depth)
            buckets.setdefault(w, []).append((r, child))
    for w in sorted(buckets, reverse=True):
        members = buckets[w]
        room = columns + w + max(grow(node) for _, node in members)
        per_batch = max(1, backend.max_batch_tokens // room)
        if isinstance(backend.batch_size, int):  # else "auto": the token budget alone
            per_batch = min(per_batch, backend.batch_size)
        for start in range(0, len(members), per_batch):
            chunk = members[start : start + per_batch]
            yield [r for r, _ in chunk], [node for _, node in chunk], w


def _forward(backend: LocalModel, seqs: Sequence[Sequence[int]], parents: Rows | None,
             starts: list[int], picks: list[int], nodes: list[PrefixNode], width: int,
             side: str) -> Batch:
    """Forward each node's own tokens (after its parent's ``start``) on its parent's row."""
    import torch

    device = backend.device
    segments = [list(seqs[n.source][s : n.depth]) for n, s in zip(nodes, starts)]
    kwargs: dict[str, Cache] = {}
    before: torch.Tensor | None = None
    start = torch.zeros(len(nodes), dtype=torch.long, device=device)
    if parents is not None:
        index = torch.tensor(picks, device=device)
        cont = parents.gather(index)
        kwargs[cache_argument(backend.model)] = cont.cache
        start, before = cont.next_position, cont.mask
    laid = pad_rows(device, segments, width, backend.pad_id, side,
                    start, before)
    real = sum(len(s) for s in segments)
    backend.stats["forwarded_tokens"] += real
    backend.stats["padding_tokens"] += len(segments) * width - real
    with (torch.inference_mode(), dense_row_blocks(backend.model),
          only_positions(backend.model, laid.last)):
        out = backend.model(input_ids=torch.tensor(laid.ids, device=device),
                            attention_mask=laid.mask, position_ids=laid.positions,
                            cache_position=laid.slots, use_cache=True, **kwargs)
    lengths = torch.tensor([len(s) for s in segments], device=device)
    rows = Rows(returned_cache(out), laid.mask, start + lengths)
    return Batch(nodes, rows, out.logits[: len(nodes), -1, :].float())


def _widest(root: PrefixNode, width: Width, grow: Grow) -> int:
    """The most cache columns any row of the tree reaches, generation included."""
    widest, stack = 0, [(root, 0)]
    while stack:
        node, columns = stack.pop()
        widest = max(widest, columns + grow(node))
        stack.extend((c, columns + width(c, c.depth - node.depth)) for c in node.children)
    return widest
