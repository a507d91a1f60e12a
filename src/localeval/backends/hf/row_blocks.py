"""Keeping every row of a local model's forward pass independent of the rest of its batch.

A dense layer (Linear, GPT-2's Conv1D) is one GEMM over all the rows of a batch, and how a GEMM
kernel rounds a row depends on the call: MKL on an AMD CPU computes a call of 1-3 or 5-7 rows
with another kernel than a call of 8; MKL's Intel AVX-512 kernels (the failure on an Intel Xeon;
reproduced here by telling MKL on an AMD CPU that it runs on an Intel one) round a partial block
of 16 rows differently for some layers, depending on the weight's alignment too, and reduce a
call of more than 256 rows (hidden size 2,048) in another order than a smaller one. Which calls
agree is a fact of the machine, the library and the layer, not a constant, so it is measured
(:func:`probe_rows`), once on a machine for each distinct dense layer (kept in
:func:`probe_file`): the smallest ``rows`` block in :data:`CANDIDATE_BLOCKS` such that every
call of a multiple of ``rows`` rows up to SMALL_ROWS gives each row the bits it gets in a call
of SMALL_ROWS rows, wherever the row sits in the call; and the most rows a call may have before
it is reduced otherwise (``chunk``, None when calls agree up to LARGE_ROWS[-1]).

While :func:`dense_row_blocks` is active, every dense layer is then called only that way: its
rows padded with rows of zeros to a multiple of ``rows`` (their outputs cut off) and, where a
chunk was found, split into calls of at most ``chunk`` rows. A row's bits then never depend on
its batch. Attention is computed row by row (:mod:`.attention`) and needs no padding; norms
and activations work on each row alone.

Where no candidate block holds for some layer (seen on no CPU so far; a GPU's kernels may be
so), padding cannot help: the layer is called as before (rows padded to WIDTH_BLOCK, never
split) and a warning says results may differ in the last bits with the batch size.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import platform
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from transformers import Cache, PreTrainedModel

# A node's tokens are padded to a multiple of this width so that nodes of equal width share a
# batch (and a row's cache columns never depend on its neighbours); the dense layers' rows are
# made whole blocks by dense_row_blocks, whatever this is.
WIDTH_BLOCK = 8
# Row blocks tried, smallest first: 8 is what AMD and AVX2 MKL need (and what every width
# already is), 16 Intel's AVX-512 MKL, 32 and 64 for kernels with wider tiles.
CANDIDATE_BLOCKS = (8, 16, 32, 64)
# Calls of up to SMALL_ROWS rows are where kernels switch between small-matrix paths: every
# multiple of a candidate block up to it is tried. Beyond it, calls of LARGE_ROWS (powers of
# two from 2 x SMALL_ROWS) are compared with the same rows in SMALL_ROWS-row calls: where a
# large call reduces in another order (Intel AVX-512 MKL above 256 rows at hidden size 2,048),
# dense layers get at most the largest size that agrees at a time. Splitting every call costs
# 2-8x on an AMD CPU's MKL (a 64-row GEMM is far slower per row), so it is done only where
# the probe shows it is needed; agreement is checked up to LARGE_ROWS[-1] rows.
SMALL_ROWS = 64
LARGE_ROWS = (128, 256, 512, 1024)


def padded(n: int, block: int = WIDTH_BLOCK) -> int:
    """``n`` rounded up to a multiple of ``block``."""
    return -(-n // block) * block


@dataclass(frozen=True)
class RowBlocks:
    """How one dense layer is called: a multiple of ``rows`` rows at a time, at most ``chunk``
    (None: any number). ``invariant`` is False where the probe found no block that holds."""

    rows: int
    chunk: int | None
    invariant: bool


# What a GEMM kernel's choice may depend on (_signature): the layer's class name, its weight's
# shape, whether it has a bias, the weight's dtype and device, torch's threads, and the weight's
# address modulo 64 bytes
Signature = tuple[str, tuple[int, ...], bool, str, str, int, int]
# A dense layer's forward, on rows of features: [..., in] -> [..., out]
Forward = Callable[..., "torch.Tensor"]

# each layer signature's probe (_signature), once per process (and once a machine: probe_file)
_PROBED: dict[Signature, RowBlocks] = {}
_WARNED: set[Signature] = set()


def is_dense(module: torch.nn.Module) -> bool:
    import torch

    return isinstance(module, torch.nn.Linear) or type(module).__name__ == "Conv1D"


def dense_weight(module: torch.nn.Module) -> torch.Tensor:
    """A dense layer's weight (an attribute nn.Module types as a tensor or a submodule)."""
    import torch

    weight = module.weight
    if not isinstance(weight, torch.Tensor):
        raise TypeError(f"{type(module).__name__}.weight is not a tensor")
    return weight


def _signature(module: torch.nn.Module) -> Signature:
    """What a GEMM kernel's choice may depend on. The weight's address modulo 64 bytes too:
    weights loaded from a safetensors file sit wherever the file puts them (40 bytes past a
    64-byte boundary in our test models), and MKL's AVX-512 kernels round differently then."""
    import torch

    weight = dense_weight(module)
    return (type(module).__name__, tuple(weight.shape), module.bias is not None,
            str(weight.dtype), str(weight.device), torch.get_num_threads(),
            weight.data_ptr() % 64)


def _in_features(module: torch.nn.Module) -> int:
    # Linear's weight is [out, in]; GPT-2's Conv1D keeps it transposed, [in, out]
    return dense_weight(module).shape[0 if type(module).__name__ == "Conv1D" else 1]


def agrees(forward: Forward, x: torch.Tensor, rows: int) -> bool:
    """Whether every call of a multiple of ``rows`` rows of ``x``, from its first rows or from
    its last, gives each row the bits the call of all of ``x`` gives it, and the call of all of
    ``x`` gives a row the same bits in another place."""
    import torch

    whole = forward(x)
    if not torch.equal(forward(x.roll(1, 0)), whole.roll(1, 0)):
        return False
    for m in range(rows, len(x), rows):
        if not (torch.equal(forward(x[:m]), whole[:m]) and
                torch.equal(forward(x[-m:]), whole[-m:])):
            return False
    return True


def probe_rows(forward: Forward, in_features: int, dtype: torch.dtype,
               device: torch.device | str) -> RowBlocks:
    """The smallest candidate block for which calls of its multiples up to SMALL_ROWS rows
    agree (:func:`agrees`) on random rows, and the most rows a call may have
    (:func:`largest_call`)."""
    import torch

    generator = torch.Generator(device="cpu").manual_seed(0)
    x = torch.randn(LARGE_ROWS[-1], in_features, generator=generator).to(dtype=dtype,
                                                                           device=device)
    with torch.inference_mode():
        for rows in CANDIDATE_BLOCKS:
            if agrees(forward, x[:SMALL_ROWS], rows):
                return RowBlocks(rows, largest_call(forward, x), True)
    return RowBlocks(WIDTH_BLOCK, None, False)


def largest_call(forward: Forward, x: torch.Tensor) -> int | None:
    """The most rows a call may have: None where calls of every LARGE_ROWS size give each row
    the bits it gets in calls of SMALL_ROWS rows, else the largest size below the first that
    does not."""
    import torch

    small = torch.cat([forward(x[i : i + SMALL_ROWS]) for i in range(0, len(x), SMALL_ROWS)])
    agreed = SMALL_ROWS
    for size in LARGE_ROWS:
        if not torch.equal(forward(x[:size]), small[:size]):
            return agreed
        agreed = size
    return None


def blocks_for(module: torch.nn.Module) -> RowBlocks:
    """The row blocks of one dense layer on this machine: probed on its first use, kept for
    the process and in :func:`probe_file` for the next ones (a probe of an LM head is seconds
    on a CPU)."""
    key = _signature(module)
    if key not in _PROBED:
        stored = _machine_key(key)
        found = _read_probes().get(stored)
        if found is None:
            weight = dense_weight(module)
            found = probe_rows(module.forward, _in_features(module), weight.dtype,
                               weight.device)
            _write_probe(stored, found)
        _PROBED[key] = found
    found = _PROBED[key]
    if not found.invariant and key not in _WARNED:
        _WARNED.add(key)
        print(f"warning: on this machine a {key[0]} layer of shape {list(key[1])} "
              f"({key[3].removeprefix('torch.')}, {key[4]}) rounds a row differently with the "
              "number of rows beside it, whatever the padding: results may differ in the last "
              "bits with the batch size", file=sys.stderr)
    return found


def probe_file() -> Path:
    """Where probes are kept between processes: beside localeval's other caches."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "localeval" / "row_blocks.json"


def _machine_key(signature: Signature) -> str:
    """A layer's signature with what else a kernel's choice depends on: the CPU (model and
    instruction sets), torch with the BLAS libraries it was built with, and the variables
    that steer those libraries (MKL_CBWR, MKL_ENABLE_INSTRUCTIONS, a preloaded library…)."""
    import torch

    cpu = platform.machine()
    try:
        info = Path("/proc/cpuinfo").read_text()
        cpu += "".join(line for line in info.splitlines()
                       if line.startswith(("model name", "flags")))[:4000]
    except OSError:
        cpu += platform.processor()
    if signature[4].startswith("cuda"):
        cpu += torch.cuda.get_device_name(torch.device(signature[4]))
    steering = sorted((k, v) for k, v in os.environ.items()
                      if k.startswith(("MKL_", "OMP_", "KMP_", "ONEDNN_", "DNNL_"))
                      or k == "LD_PRELOAD")
    made = json.dumps([cpu, torch.__version__, torch.__config__.show(), steering,
                       list(signature)], default=str)
    return hashlib.sha256(made.encode()).hexdigest()[:32]


def _read_probes() -> dict[str, RowBlocks]:
    """The probes kept in :func:`probe_file`; an entry that is not a probe's is left out (and
    probed again), as is a file that cannot be read."""
    try:
        stored = json.loads(probe_file().read_text())
    except (OSError, ValueError):
        return {}
    found: dict[str, RowBlocks] = {}
    for key, entry in stored.items() if isinstance(stored, dict) else ():
        if (isinstance(entry, dict) and entry.get("rows") in CANDIDATE_BLOCKS
                and entry.get("chunk") in (None, SMALL_ROWS, *LARGE_ROWS)
                and isinstance(entry.get("invariant"), bool)):
            found[key] = RowBlocks(entry["rows"], entry["chunk"], entry["invariant"])
    return found


def _write_probe(key: str, found: RowBlocks) -> None:
    """Adds a probe to :func:`probe_file` (written whole under another name, then renamed, so a
    reader never sees half a file); a cache that cannot be written is only not kept."""
    path = probe_file()
    stored = {k: asdict(v) for k, v in _read_probes().items()}
    stored[key] = asdict(found)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}")
        partial.write_text(json.dumps(stored, indent=0, sort_keys=True))
        os.replace(partial, path)
    except OSError:
        pass


def model_row_blocks(model: torch.nn.Module) -> RowBlocks:
    """The largest row block any of ``model``'s dense layers needs (for the padding count), and
    whether every layer's holds."""
    found = [blocks_for(m) for m in model.modules() if is_dense(m)]
    if not found:
        return RowBlocks(WIDTH_BLOCK, None, True)
    chunks = [b.chunk for b in found if b.chunk is not None]
    return RowBlocks(max(b.rows for b in found), min(chunks) if chunks else None,
                     all(b.invariant for b in found))


def _blocked(forward: Forward, blocks: RowBlocks) -> Forward:
    """``forward`` called on a multiple of ``blocks.rows`` rows (zeros added, their outputs cut
    off), at most ``blocks.chunk`` rows a call."""
    import torch

    chunk = blocks.chunk

    def call(x: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        rows = x.shape[:-1].numel()
        if rows % blocks.rows == 0 and (chunk is None or rows <= chunk):
            whole: torch.Tensor = forward(x, *args, **kwargs)
            return whole
        flat = x.reshape(rows, x.shape[-1])
        fill = padded(rows, blocks.rows) - rows
        if fill:
            flat = torch.cat([flat, flat.new_zeros(fill, x.shape[-1])])
        if chunk is None:
            out: torch.Tensor = forward(flat, *args, **kwargs)
        else:
            out = torch.cat([forward(flat[i : i + chunk], *args, **kwargs)
                             for i in range(0, len(flat), chunk)])
        return out[:rows].reshape(*x.shape[:-1], out.shape[-1])

    return call


@contextmanager
def dense_row_blocks(model: torch.nn.Module) -> Iterator[None]:
    """While active, every dense layer of ``model`` is called on whole row blocks of at most a
    chunk of rows (:class:`RowBlocks`, probed once per layer shape), so no row's output depends
    on the rows beside it. Only the dense layers see the extra rows; attention and the KV cache
    hold the real rows alone."""
    dense = [m for m in model.modules() if is_dense(m)]
    own = [m.__dict__.get("forward") for m in dense]  # an instance's own forward, if it has one
    try:
        for module in dense:
            module.forward = _blocked(module.forward, blocks_for(module))
        yield
    finally:
        for module, forward in zip(dense, own):
            if forward is None:
                del module.forward
            else:
                module.forward = forward


@contextmanager
def only_positions(model: PreTrainedModel, last: torch.Tensor) -> Iterator[None]:
    """Feed the LM head only each row's hidden state at ``last[row]`` (shape [B, 1, H]). The
    model's own head and any post-processing (e.g. logit soft-capping) still apply; the head's
    rows are made whole blocks by :func:`dense_row_blocks`."""
    import torch

    # get_output_embeddings is unannotated in transformers (an untyped call under --strict)
    head: torch.nn.Module = model.get_output_embeddings()  # type: ignore[no-untyped-call]
    rows = torch.arange(len(last), device=last.device)

    def select(_module: torch.nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...]:
        return (args[0][rows, last].unsqueeze(1), *args[1:])

    handle = head.register_forward_pre_hook(select)
    try:
        yield
    finally:
        handle.remove()


@dataclass
class PaddedRows:
    """Rows of token ids continuing a KV cache, padded to one width: ``ids`` [rows, width]
    (a list), ``mask`` [rows, cache columns + width], ``positions`` [rows, width] skipping the
    pads, ``last`` each row's last real column, ``slots`` the cache positions of the width."""

    ids: list[list[int]]
    mask: torch.Tensor
    positions: torch.Tensor
    last: torch.Tensor
    slots: torch.Tensor


def pad_rows(device: torch.device, rows: list[list[int]], width: int, pad: int, side: str,
             start: torch.Tensor | None = None,
             before: torch.Tensor | None = None) -> PaddedRows:
    """``start`` is each row's first position ([rows]; 0 by default) and ``before`` the mask of
    the cache's columns each row continues ([rows, columns]; none by default). Left padding puts
    the pads before each row's tokens, right padding after them; either way they are masked out
    and position ids skip them, so every row sees exactly its own tokens after its cache."""
    import torch

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


def gathered_cache(cache: Cache, index: torch.Tensor) -> Cache:
    """A new cache holding rows ``index`` of ``cache`` (repeats allowed); ``cache`` itself is
    left as it was, for the other batches that continue it."""
    rows = copy.copy(cache)
    rows.layers = [copy.copy(layer) for layer in cache.layers]
    rows.batch_select_indices(index)
    return rows
