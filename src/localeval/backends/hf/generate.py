"""``Generate`` on a local model: greedy decoding of many prompts together, from the shared-prefix
KV cache.

How:
- Prompts are tokenised whole and forwarded along their prefix tree (:mod:`.prefix`,
  :mod:`.tree`), as for scoring: each shared prefix once, the nodes of a level in batches of
  equal padded width (a prompt's last node: :func:`row_width`), as many rows as the backend's
  token budget allows for the cache columns + the generation budget (the KV cache grows by one
  slot per step).
- Prefill is that forward pass: pads (left: before a node's tokens; right: after them) are
  masked out and position ids skip them, so every row sees exactly its own prompt. Only each
  row's last token reaches the LM head; its argmax is the first generated token.
- Decode: one token per row per step, the argmax. A row ends at an EOS token, at the token that
  completes a stop string, or at its ``max_tokens``, like ``model.generate``, and leaves the
  batch (its cache rows are selected away). Per-step Python work is a loop over the batch's
  rows, never the vocabulary.
- Stop strings: transformers' ``StopStringCriteria``, built once per stop tuple (building scans
  the vocabulary), applied to a [rows, k] tensor of each row's last tokens. Its tail includes
  the prompt's last tokens, as ``model.generate`` gives it, so a stop string straddling prompt
  and output stops generation exactly as it did when we decoded one prompt at a time.

Why a row's output does not depend on the batch it is in (byte for byte, with the default eager
attention; tests/test_hf_generate.py checks it against batch size 1 and plain ``generate``):
- every row of a batch has the same padded width, so its attention spans the same number of
  keys whatever its neighbours are, and attention matmuls are computed row by row;
- the dense layers are GEMMs over the batch's rows, and a GEMM kernel rounds a row differently
  with the number of rows in the call; every dense layer is therefore called on whole blocks of
  rows, of a size probed for this machine and layer (:mod:`.row_blocks`), padded with rows of
  zeros (attention and the KV cache keep the real rows only). At batch size 1 a decode step's
  GEMMs therefore multiply 8 rows (16 on Intel AVX-512), not 1 (about twice the LM head's time
  on our 2-core CPU), and the numbers can differ in the last bit from an unpadded
  ``model.generate``:
  greedy texts are the same unless two tokens tie to within that rounding.

One prompt at a time (``model.generate`` on a one-row cache of the tree's first level, with no
pads, which a repetition penalty would read as prompt tokens) when the model's generation
config asks for something besides plain argmax (a repetition penalty, a minimum length, ...),
and for models with sliding-window layers when a row's prompt, pads and generation budget
outgrow the window: the cache keeps the last columns, not the last positions, so pads inside
the window would change what a row sees.

Why this module is over 300 lines: batching, prefill, the decode loop, stop matching and the
one-prompt fallback share the rows' layout (widths, positions, masks); apart, they would pass it
around.
"""

from __future__ import annotations

import copy
import hashlib
import math
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from ..base import GENERATION_CONFIG, Failed, Generate, Generated, Response, draw_key
from ..failures import ContextOverflow, ModelError, Unsupported
from ..prompt_tokens import generation_text
from .kv_cache import cache_argument, returned_cache
from .prefix import NODE_COST, STEP_COST, PrefixNode, plan_prefix_tree
from .row_blocks import WIDTH_BLOCK, dense_row_blocks, gathered_cache, model_row_blocks
from .row_blocks import padded as _padded
from .tree import Batch, Rows, fits_window, plan, walk

if TYPE_CHECKING:
    import torch
    from transformers import Cache, PreTrainedTokenizerBase, StoppingCriteriaList
    from transformers.cache_utils import DynamicLayer

    from .local_model import LocalModel

# what a step of the run yields: a request's index and its response
Answers = Iterator[tuple[int, Response]]


class _Generates(Protocol):
    """A model's ``generate``, as :func:`generate_one` calls it: the prompt's ids and the
    generated ones after them, [1, prompt + new]."""

    def generate(self, inputs: torch.Tensor, **kwargs: Any) -> torch.Tensor: ...


# generation-config fields that change which token greedy decoding picks, with their neutral values
GREEDY_NEUTRAL = {"repetition_penalty": (None, 1.0), "no_repeat_ngram_size": (None, 0),
                  "encoder_repetition_penalty": (None, 1.0), "bad_words_ids": (None,),
                  "min_length": (None, 0), "min_new_tokens": (None, 0),
                  "forced_bos_token_id": (None,), "forced_eos_token_id": (None,),
                  "suppress_tokens": (None,), "begin_suppress_tokens": (None,),
                  "sequence_bias": (None,), "exponential_decay_length_penalty": (None,),
                  "renormalize_logits": (None, False), "guidance_scale": (None, 1.0),
                  "num_beams": (None, 1)}


def run_generations(backend: LocalModel, requests: list[Generate]) -> Answers:
    """Yield (index, response) for each request, batch by batch; draws (``sample`` set) one at
    a time with ``model.generate``."""
    encoded = [backend.encode(*generation_text(backend.tokenizer, r, backend.identity["model"],
                                               backend.template_date))
               for r in requests]
    ok = yield from _over_the_context(backend, requests, encoded)
    ok = yield from _draws(backend, requests, encoded, ok)
    kept, prompts = [requests[i] for i in ok], [encoded[i] for i in ok]

    def budget(node: PrefixNode) -> int:
        return max((kept[j].max_tokens for j in node.ends), default=0)

    def width(node: PrefixNode, n: int) -> int:
        return row_width(n, budget(node)) if node.ends else _padded(n)

    steps = [STEP_COST * r.max_tokens for r in kept]  # what a decode batch of its own may cost
    # the batched plan only where batches can decode (the fallback walks a tree of its own)
    tree = None if one_at_a_time_reason(backend) else plan(backend, prompts, width, budget, steps)
    if tree is None or not fits_window(backend, tree, width, budget):
        answered = _one_at_a_time(backend, kept, prompts)
    else:
        answered = (answer for batch in walk(backend, tree, prompts, width, budget)
                    for answer in _decode_ends(backend, batch, kept, prompts))
    for j, response in answered:
        yield ok[j], response


def _decode_ends(backend: LocalModel, batch: Batch, requests: list[Generate],
                 prompts: list[list[int]]) -> Answers:
    """Decode the prompts that end at the batch's nodes, a decode batch per stop tuple."""
    import torch

    ends = [(k, j) for k, node in enumerate(batch.nodes) for j in node.ends]
    stops = sorted({requests[j].stop for _, j in ends})
    for stop in stops:
        same = [(k, j) for k, j in ends if requests[j].stop == stop]
        picks = [k for k, _ in same]
        index = torch.tensor(picks, device=backend.device)
        # decode in the batch's own cache when nothing else will read it (no copy of it held)
        alone = len(stops) == 1 and not any(node.children for node in batch.nodes)
        rows = batch.rows if alone and picks == list(range(len(batch.nodes))) \
            else batch.rows.gather(index)
        for k, response in _decode(backend, [requests[j] for _, j in same],
                                   [prompts[j] for _, j in same], rows, batch.logits[index]):
            yield same[k][1], response


def _draws(backend: LocalModel, requests: list[Generate], encoded: list[list[int]],
           ok: list[int]) -> Generator[tuple[int, Response], None, list[int]]:
    """Yield the response of each draw (``sample`` set) among ``ok``; return the others."""
    for i in ok:
        if _drawn(requests[i]):
            yield i, draw_one(backend, requests[i], encoded[i])
    return [i for i in ok if not _drawn(requests[i])]


def _drawn(request: Generate) -> bool:
    return request.sample is not None or request.decoding == GENERATION_CONFIG


def _over_the_context(backend: LocalModel, requests: list[Generate], encoded: list[list[int]]
                      ) -> Generator[tuple[int, Response], None, list[int]]:
    """Yield an error response for each request that cannot fit; return the others' indices."""
    limit = backend.max_context()
    ok: list[int] = []
    for i, (r, ids) in enumerate(zip(requests, encoded)):
        if not ids:
            yield i, Failed(Unsupported("prompt has no tokens; there is nothing to "
                                                 "continue"))
        elif limit and len(ids) + r.max_tokens > limit:
            yield i, Failed(ContextOverflow(
                f"prompt has {len(ids)} tokens; with {r.max_tokens} to generate that is over "
                f"the model's context of {limit}"))
        else:
            ok.append(i)
    return ok


def _one_at_a_time(backend: LocalModel, requests: list[Generate],
                   prompts: list[list[int]]) -> Answers:
    """``model.generate`` per prompt, continuing a copy of the one-row cache of the deepest shared
    prefix before it: the tree walked one node at a time, with no pads (which a repetition
    penalty would read as prompt tokens, and a sliding window would count as columns)."""
    tree = plan_prefix_tree(prompts, NODE_COST if backend.prefix_reuse else math.inf)
    stack: list[tuple[PrefixNode, Cache | None]] = [(tree, None)]  # (node, its parent's cache)
    while stack:
        node, before = stack.pop()
        for j in node.ends:  # a prompt that is this node's prefix continues the one before it
            yield j, generate_one(backend, requests[j], prompts[j], before)
        if node.children:
            own = before if node is tree else _extended(backend, before,
                                                        prompts[node.source][: node.depth])
            stack.extend((child, own) for child in reversed(node.children))


def _extended(backend: LocalModel, cache: Cache | None, ids: list[int]) -> Cache:
    """A new one-row cache of ``ids``, continuing a copy of ``cache`` (of a prefix of them)."""
    import torch

    done = cache.get_seq_length() if cache is not None else 0
    past: dict[str, Cache] = {}
    if cache is not None and done:
        past[cache_argument(backend.model)] = gathered_cache(
            cache, torch.tensor([0], device=backend.device))
    with torch.inference_mode():
        out = backend.model(input_ids=torch.tensor([ids[done:]], device=backend.device),
                            use_cache=True, **past)
    backend.stats["forwarded_tokens"] += len(ids) - done
    return returned_cache(out)


def one_at_a_time_reason(backend: LocalModel) -> str | None:
    """Why this model cannot decode in batches (None when it can)."""
    config = backend.model.generation_config
    for name, neutral in GREEDY_NEUTRAL.items():
        if getattr(config, name, None) not in neutral:
            return f"generation config sets {name}"
    return None


@dataclass
class _Row:
    """One prompt being decoded: its request, tokens so far, and whether it is done."""

    request: Generate
    n_prompt: int
    new: list[int] = field(default_factory=list)
    done: bool = False
    nan: bool = False  # its logits held a NaN: no token can be chosen, the request fails


def _decode(backend: LocalModel, requests: list[Generate], prompts: list[list[int]], rows: Rows,
            logits: torch.Tensor) -> Answers:
    """Decode one batch (all with the same stop strings) from its prompts' forwarded ``rows``
    and the logits of their last tokens, until every row has ended. Each row's response is
    yielded as soon as the row ends (its index in the batch), so the run caches it at once: a
    kill late in a long batch loses only the rows still decoding."""
    import torch

    steps = max(r.max_tokens for r in requests)
    cache, column = rows.cache, rows.mask.shape[1]
    for layer in getattr(cache, "layers", ()):
        if type(layer).__name__ == "DynamicLayer" and layer.is_initialized:
            _Room(layer, steps)
    mask = torch.cat([rows.mask, rows.mask.new_ones(len(requests), steps)], dim=1)
    positions = rows.next_position
    out = [_Row(r, len(ids)) for r, ids in zip(requests, prompts)]
    live = list(range(len(out)))  # the row at each position of the batch
    stop = _StopTails(backend, requests[0].stop, prompts)
    block = model_row_blocks(backend.model).rows  # the layers' row block: once, not a step
    eos = eos_ids(backend)
    while True:
        tokens, nan = logits.argmax(-1), logits.isnan().any(-1).tolist()
        keep = _advance(out, live, tokens.tolist(), stop.update(tokens), eos, nan)
        going = {live[k] for k in keep}
        yield from ((r, _response(backend, out[r])) for r in live if r not in going)
        if not keep:
            break
        if len(keep) < len(live):  # ended rows leave the batch
            index = torch.tensor(keep, device=backend.device)
            cache.batch_select_indices(index)
            mask, positions, tokens = mask[index], positions[index], tokens[index]
            stop.select(index)
            live = [live[k] for k in keep]
        logits = _step(backend, tokens, positions, mask[:, : column + 1], cache, column, block)
        positions = positions + 1
        column += 1


def _step(backend: LocalModel, tokens: torch.Tensor, positions: torch.Tensor,
          mask: torch.Tensor, cache: Cache, column: int, block: int) -> torch.Tensor:
    """One decode step for every row of the batch; the logits of each one's next token
    (``block``: the row block the dense layers pad to, for the padding count)."""
    import torch

    backend.stats["decode_steps"] += 1
    backend.stats["forwarded_tokens"] += len(tokens)
    backend.stats["decode_tokens"] += len(tokens)  # forwarded_tokens less these: the prompts'
    backend.stats["padding_tokens"] += _padded(len(tokens), block) - len(tokens)  # GEMM filler
    kv = {cache_argument(backend.model): cache}
    with torch.inference_mode(), dense_row_blocks(backend.model):
        logits: torch.Tensor = backend.model(
            input_ids=tokens[:, None], attention_mask=mask, position_ids=positions[:, None],
            **kv, cache_position=torch.tensor([column], device=backend.device),
            use_cache=True).logits
    return logits[:, -1, :]


def _advance(rows: list[_Row], live: list[int], tokens: list[int], stopped: list[bool],
             eos: set[int], nan: list[bool]) -> list[int]:
    """Append each batch position's new token to its row and mark the rows that end with it
    (EOS, a stop string, the budget, NaN logits). Return the positions of the rows that go
    on."""
    keep = []
    for k, (r, token) in enumerate(zip(live, tokens)):
        row = rows[r]
        row.new.append(token)
        row.nan = nan[k]
        row.done = row.nan or token in eos or stopped[k] or \
            len(row.new) >= row.request.max_tokens
        if not row.done:
            keep.append(k)
    return keep


class _Room:
    """A cache layer's keys and values kept in buffers with room for ``steps`` more tokens:
    transformers' ``DynamicLayer.update`` concatenates, copying the whole cache (prefix
    included, once per row) at every decode step; writing into room reserved once does not.
    The layer shows views of the filled part, so attention reads exactly what it read before."""

    def __init__(self, layer: DynamicLayer, steps: int):
        keys, values = layer.keys, layer.values
        assert keys is not None and values is not None  # an initialized layer's (see _decode)
        self.layer, self.n = layer, keys.shape[-2]
        self.keys = self._reserve(keys, steps)
        self.values = self._reserve(values, steps)
        # this layer's own methods in place of its class's (the other layers keep theirs)
        layer.update = self.update  # type: ignore[method-assign]
        layer.batch_select_indices = self.select  # type: ignore[method-assign]
        self._show()

    def _reserve(self, states: torch.Tensor, steps: int) -> torch.Tensor:
        room = states.new_empty(*states.shape[:2], self.n + steps, states.shape[-1])
        room[:, :, : self.n] = states
        return room

    def _show(self) -> tuple[torch.Tensor, torch.Tensor]:
        keys, values = self.keys[:, :, : self.n], self.values[:, :, : self.n]
        self.layer.keys, self.layer.values = keys, values
        return keys, values

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *_args: object,
               **_kwargs: object) -> tuple[torch.Tensor, torch.Tensor]:
        m = key_states.shape[-2]
        self.keys[:, :, self.n : self.n + m] = key_states
        self.values[:, :, self.n : self.n + m] = value_states
        self.n += m
        return self._show()

    def select(self, indices: torch.Tensor) -> None:
        self.keys, self.values = self.keys[indices], self.values[indices]
        self._show()


class _StopTails:
    """Each slot's last tokens (prompt tail, then output), for the stop-string matcher: the
    matcher reads only the last ``maximum_token_len`` tokens, so that is all we keep."""

    def __init__(self, backend: LocalModel, stop: tuple[str, ...], encoded: list[list[int]]):
        import torch

        self.criteria = stop_criteria(backend, stop)
        self.tails: torch.Tensor | None = None
        if self.criteria:
            k = self.criteria[0].maximum_token_len
            pad = backend.pad_id
            self.tails = torch.tensor([([pad] * k + ids)[-k:] for ids in encoded],
                                      device=backend.device)

    def update(self, tokens: torch.Tensor) -> list[bool]:
        """Append this step's token to every slot; whether each slot's tail ends a stop."""
        import torch

        if self.tails is None:
            return [False] * len(tokens)
        self.tails = torch.cat([self.tails[:, 1:], tokens[:, None]], dim=1)
        stopped: list[bool] = self.criteria[0](self.tails, None).tolist()
        return stopped

    def select(self, index: torch.Tensor) -> None:
        if self.tails is not None:
            self.tails = self.tails[index]


def stop_criteria(backend: LocalModel, stop: tuple[str, ...]) -> StoppingCriteriaList:
    """transformers' stop-string matcher, built once per stop tuple: building it scans the
    whole vocabulary, far slower than the generation it guards."""
    from transformers import StoppingCriteriaList, StopStringCriteria

    if stop not in backend._stops:
        backend._stops[stop] = StoppingCriteriaList(
            [StopStringCriteria(backend.tokenizer, list(stop))] if stop else [])
    return backend._stops[stop]


def eos_ids(backend: LocalModel) -> set[int]:
    eos: int | list[int] | None = backend.model.generation_config.eos_token_id
    return set(eos) if isinstance(eos, list | tuple) else ({eos} if eos is not None else set())


def _response(backend: LocalModel, row: _Row) -> Response:
    backend.stats["requests"] += 1
    backend.stats["prompt_tokens"] += row.n_prompt
    if row.nan:
        return Failed(ModelError(nan_logits(len(row.new))))
    return Generated(text=cut_at_stops(decoded(backend.tokenizer, row.new), row.request.stop),
                     n_prompt_tokens=row.n_prompt, n_completion_tokens=len(row.new))


def decoded(tokenizer: PreTrainedTokenizerBase, ids: list[int]) -> str:
    """The text of generated ``ids``, special tokens left out."""
    text = tokenizer.decode(ids, skip_special_tokens=True)
    # decode's annotation is str | list[str] for any input; one sequence of ids gives one str
    return cast("str", text)


def nan_logits(position: int) -> str:
    """Why a generation fails whose logits held a NaN (argmax would pick an arbitrary token: on
    an all-NaN row, token 0, often a special token, decoded as '')."""
    return (f"the model's logits are NaN at generated token {position}: no token can be "
            "chosen (the weights or the dtype overflow; try --dtype float32)")


class _NaNWatch:
    """A logits processor for ``model.generate``: notes the first step whose logits hold a NaN
    and hands on zeros instead, so sampling does not raise; that request then fails."""

    def __init__(self) -> None:
        self.at: int | None = None
        self.steps = 0

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        self.steps += 1
        if self.at is None and bool(scores.isnan().any()):
            self.at = self.steps
        return scores if self.at is None else scores.nan_to_num(0.0)


def cut_at_stops(text: str, stop: tuple[str, ...]) -> str:
    """Generation stops after the token that completes a stop string; the text ends before it."""
    for s in stop:
        if s in text:
            text = text[: text.index(s)]
    return text


def generate_one(backend: LocalModel, request: Generate, ids: list[int],
                 prefix_cache: Cache | None, **sampling: float | bool) -> Response:
    """One prompt with ``model.generate``, continuing from a copy of the prefix cache; greedy
    unless ``sampling`` says otherwise."""
    import torch

    cached = prefix_cache.get_seq_length() if prefix_cache is not None else 0
    extra = {cache_argument(backend.model): copy.deepcopy(prefix_cache)} if cached else {}
    from transformers import LogitsProcessorList

    # AutoModelForCausalLM's classes generate (GenerationMixin). transformers types
    # generate()'s self as a protocol (GenerativePreTrainedModel) that pyright finds its own
    # models do not meet (a property where it asks for an attribute): read as what we call
    model = cast("_Generates", backend.model)
    watch = _NaNWatch()  # applied last, after the generation config's own processors
    with torch.inference_mode():
        out = model.generate(
            torch.tensor([ids], device=backend.device),
            attention_mask=torch.ones(1, len(ids), dtype=torch.long, device=backend.device),
            max_new_tokens=request.max_tokens,
            **(sampling or {"do_sample": False}),
            pad_token_id=backend.tokenizer.pad_token_id,
            stopping_criteria=stop_criteria(backend, request.stop),
            logits_processor=LogitsProcessorList([watch]),
            **extra,
        )
    new = out[0, len(ids):].tolist()
    backend.stats["requests"] += 1
    backend.stats["prompt_tokens"] += len(ids)
    backend.stats["forwarded_tokens"] += len(ids) - cached + len(new)
    if watch.at is not None:
        return Failed(ModelError(nan_logits(watch.at)))
    return Generated(text=cut_at_stops(decoded(backend.tokenizer, new), request.stop),
                     n_prompt_tokens=len(ids), n_completion_tokens=len(new))


def draw_one(backend: LocalModel, request: Generate, ids: list[int]) -> Response:
    """Draw ``request.sample`` of the prompt: sampled with the model's own defaults as vLLM
    takes them (the temperature, top-p and top-k its generation_config.json sets; else 1.0, 1.0
    and none), the RNG seeded from the prompt's tokens and the draw's number. With
    ``decoding="generation_config"``, as transformers' generate() decides from the generation
    config alone: greedy unless it sets do_sample, else every sampling setting it holds."""
    import torch

    config = backend.model.generation_config
    if request.decoding == GENERATION_CONFIG:
        # generate() without do_sample: the generation config's own settings decide
        if not config.do_sample:
            return generate_one(backend, request, ids, None)
        sampling: dict[str, float | bool] = {"do_sample": True}
    else:
        own = config.to_diff_dict()  # only what the model's file sets
        sampling = {"do_sample": True, "temperature": own.get("temperature", 1.0),
                    "top_p": own.get("top_p", 1.0), "top_k": own.get("top_k", 0)}
    key = draw_key(ids, request)
    torch.manual_seed(int.from_bytes(hashlib.sha256(key).digest()[:8], "big") >> 1)
    return generate_one(backend, request, ids, None, **sampling)


def row_width(n: int, max_tokens: int) -> int:
    """A row's padded suffix width, from the row alone (so never from its batch): a multiple of
    the largest power of two up to its generation budget (at least WIDTH_BLOCK, at most 128).
    Rows share a batch only at equal widths. A padded slot costs one token of the prefill,
    which shares a forward pass with the whole suffix, while a row left in a smaller batch
    costs decode steps, one forward pass per token: padding by up to the budget pays."""
    block = WIDTH_BLOCK
    while block * 2 <= min(max_tokens, 128):
        block *= 2
    return _padded(n, block)
