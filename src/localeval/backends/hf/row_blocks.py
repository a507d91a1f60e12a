"""Keeping every row of a local model's forward pass independent of the rest of its batch.

CPU GEMM kernels (MKL) round a row that falls in a partial block of rows differently from one
in a full block, so a dense layer's output for a row can change in the last bit with the number
of rows beside it. Forward passes here therefore hand every dense layer a multiple of
ROW_BLOCK rows: scoring and prefill batches have a width that is a multiple of ROW_BLOCK, the
LM head gets its selected rows padded (:func:`only_positions`), and decode steps, one row per
prompt, pad each dense layer's input with rows of zeros (:func:`full_row_blocks`). Attention
is computed row by row and needs no padding.
"""

from __future__ import annotations

import copy
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

ROW_BLOCK = 8


def padded(n: int, block: int = ROW_BLOCK) -> int:
    """``n`` rounded up to a multiple of ``block``."""
    return -(-n // block) * block


@contextmanager
def only_positions(model, last):
    """Feed the LM head only each row's hidden state at ``last[row]`` (shape [B, 1, H]), in a
    multiple of ROW_BLOCK rows. The model's own head and any post-processing (e.g. logit
    soft-capping) still apply."""
    import torch

    head = model.get_output_embeddings()
    rows = torch.arange(len(last), device=last.device)
    size = padded(len(last))

    def select(_module, args):
        picked = args[0][rows, last]
        picked = torch.cat([picked, picked.new_zeros(size - len(last), picked.shape[-1])])
        return (picked.unsqueeze(1), *args[1:])

    handle = head.register_forward_pre_hook(select)
    try:
        yield
    finally:
        handle.remove()


@contextmanager
def full_row_blocks(model):
    """Feed every dense layer (Linear, GPT-2's Conv1D) a multiple of ROW_BLOCK rows, adding rows
    of zeros and cutting their outputs off: a decode step has one row per prompt, and CPU GEMM
    kernels round a row in a partial block differently. Only the dense layers see the extra
    rows; attention and the KV cache hold the real rows alone."""
    import torch

    shapes: dict[int, torch.Size] = {}

    def pad(module, args):
        x = args[0]
        rows = x.shape[:-1].numel()
        if rows % ROW_BLOCK == 0:
            return None
        shapes[id(module)] = x.shape
        flat = x.reshape(rows, x.shape[-1])
        return (torch.cat([flat, flat.new_zeros(padded(rows) - rows, x.shape[-1])]), *args[1:])

    def cut(module, _args, out):
        shape = shapes.pop(id(module), None)
        if shape is None:
            return None
        return out[: shape[:-1].numel()].reshape(*shape[:-1], out.shape[-1])

    handles = []
    for module in model.modules():
        if isinstance(module, torch.nn.Linear) or type(module).__name__ == "Conv1D":
            handles += [module.register_forward_pre_hook(pad), module.register_forward_hook(cut)]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


@dataclass
class PaddedRows:
    """Rows of token ids continuing a KV cache, padded to one width: ``ids`` [rows, width]
    (a list), ``mask`` [rows, cache columns + width], ``positions`` [rows, width] skipping the
    pads, ``last`` each row's last real column, ``slots`` the cache positions of the width."""

    ids: list[list[int]]
    mask: Any
    positions: Any
    last: Any
    slots: Any


def pad_rows(torch, device, rows: list[list[int]], width: int, pad: int, side: str,
             start=None, before=None) -> PaddedRows:
    """``start`` is each row's first position ([rows]; 0 by default) and ``before`` the mask of
    the cache's columns each row continues ([rows, columns]; none by default). Left padding puts
    the pads before each row's tokens, right padding after them; either way they are masked out
    and position ids skip them, so every row sees exactly its own tokens after its cache."""
    n = len(rows)
    if start is None:
        start = torch.zeros(n, dtype=torch.long, device=device)
    if before is None:
        before = torch.ones(n, 0, dtype=torch.long, device=device)
    fill = [width - len(r) for r in rows]
    steps = torch.arange(width, device=device)
    if side == "left":
        ids = [[pad] * f + r for r, f in zip(rows, fill)]
        own = [[0] * f + [1] * len(r) for r, f in zip(rows, fill)]
        shift = torch.tensor(fill, device=device)[:, None]
        positions = start[:, None] + (steps[None, :] - shift).clamp(min=0)
        last = torch.full((n,), width - 1, device=device)
    else:
        ids = [r + [pad] * f for r, f in zip(rows, fill)]
        own = [[1] * len(r) + [0] * f for r, f in zip(rows, fill)]
        positions = start[:, None] + steps[None, :]
        last = torch.tensor([len(r) - 1 for r in rows], device=device)
    mask = torch.cat([before, torch.tensor(own, dtype=torch.long, device=device)], dim=1)
    return PaddedRows(ids, mask, positions, last, steps + before.shape[1])


def gathered_cache(cache, index):
    """A new cache holding rows ``index`` of ``cache`` (repeats allowed); ``cache`` itself is
    left as it was, for the other batches that continue it."""
    rows = copy.copy(cache)
    rows.layers = [copy.copy(layer) for layer in cache.layers]
    rows.batch_select_indices(index)
    return rows
