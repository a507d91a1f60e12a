"""Local Hugging Face causal LMs (transformers), on CPU or GPU.

How ScoreNext requests are computed, and why:
- Every prompt is tokenised whole. The token ids of all requests form a prefix tree
  (:mod:`.prefix`): a subject's instruction and few-shot demonstrations, a guard's preamble,
  each item, each of its policies. :mod:`.tree` forwards every node once, the nodes of a
  level in batches of equal padded width, each row continuing its parent's KV cache rows, and
  a request's log-probs are read where its prompt ends.
- Only the hidden state of each row's last real token reaches the LM head, so we never build
  full-vocabulary logits for every position (a pre-hook on the output embedding selects it).
- Each node's tokens are right-padded (``padding_side``) and attention is ``eager`` by default
  (computed without copying the KV cache per query head: :mod:`.attention`): with that, a row's
  numbers do not depend on what else is in its batch (checked in the tests), so results are
  identical whatever the batch size. ``sdpa`` is faster on GPUs but differs across batch sizes by ~1e-6.

Generation (batched greedy decoding from the same prefix tree) is in :mod:`.generate`,
whole-text log-probs in :mod:`.text`.

Why this module is over 300 lines: loading, identity, tokenising and scoring share one model,
tokenizer and configuration; split apart they would pass those around.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from ...errors import LocalevalError, OverContextError
from ..base import (
    Backend,
    Failed,
    Generate,
    NextLogprobs,
    Progress,
    Prompt,
    Q,
    Request,
    Response,
    ScoreNext,
    TextLogprobs,
    only,
)
from ..config import DEFAULT_TEMPLATE_DATE, DTYPES, BackendConfig
from ..failures import ModelError, as_failure
from ..options import HFOptions
from ..prompt_tokens import prints_date, render, score_tokens
from .attention import grouped as grouped_attention
from .attention import implementation as attention_implementation
from .kv_cache import cache_argument, returned_cache
from .tree import plan, walk

if TYPE_CHECKING:
    import torch
    from transformers import (
        PretrainedConfig,
        PreTrainedModel,
        PreTrainedTokenizerBase,
        StoppingCriteriaList,
    )

# what a run over one kind of request yields: each request's index (in its list) and response
Answers = Iterator[tuple[int, Response]]


class HFBackend(Backend):
    Options = HFOptions  # the options it takes (.options: --help reads them there)
    @classmethod
    def preflight(cls, target: str, config: BackendConfig) -> None:
        """The model folder or Hub repo exists, with config.json and weights."""
        from ..hub import check_model_source

        check_model_source(target, config.revision, weights=True)

    def __init__(
        self,
        model: str,
        *,
        revision: str | None = None,
        dtype: str = "auto",
        device: str = "auto",
        batch_size: int | str = "auto",
        attn: str = "eager",
        prefix_reuse: bool = True,
        max_batch_tokens: int | None = None,
        padding_side: str = "right",
        model_args: dict[str, Any] | None = None,
        template_date: str | None = None,
    ) -> None:
        import torch
        import transformers

        _check_options(dtype, batch_size, padding_side)
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        _check_device(device)
        # ours shows questions/s instead (disable_progress_bar is unannotated in transformers)
        transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        self.device = torch.device(device)
        self.batch_size = batch_size
        self.prefix_reuse = prefix_reuse
        self.padding_side = padding_side
        # stop strings -> matcher (generate)
        self._stops: dict[tuple[str, ...], StoppingCriteriaList] = {}
        # forwarded = real tokens run through the model; padding = the extra we pad batches with
        self.stats: dict[str, int] = {"forwarded_tokens": 0, "padding_tokens": 0,
                                      "prompt_tokens": 0, "requests": 0, "decode_steps": 0,
                                      "decode_tokens": 0}
        self.name, self.revision, self.attn = model, revision, attn
        # --model-args: more from_pretrained options (trust_remote_code, ...), as lm-eval takes
        self.model_args = dict(model_args or {})
        shared = {k: v for k, v in self.model_args.items() if k == "trust_remote_code"}
        try:
            self.config: PretrainedConfig = transformers.AutoConfig.from_pretrained(
                model, revision=revision, **shared)
            # given the config, the tokenizer does not read it again to find its class
            self.tokenizer: PreTrainedTokenizerBase = transformers.AutoTokenizer.from_pretrained(
                model, revision=revision, config=self.config, **shared)
        except (OSError, ValueError) as e:
            raise _load_error(model, e) from None
        # what the weights load as; "auto": the checkpoint's dtype, known for sure only once
        # loaded (so self.dtype is then read from the loaded model)
        self._load_dtype = self._torch_dtype(dtype)
        self._model: PreTrainedModel | None = None
        self.dtype: torch.dtype = (self._load_dtype if self._load_dtype != "auto"
                                   else self.model.dtype)
        if self.tokenizer.pad_token_id is None:
            # Padding is masked out, so any id will do; this only makes batching possible.
            self.tokenizer.pad_token = self.tokenizer.eos_token or self.tokenizer.unk_token
        # the id rows are padded with: 0 where the tokenizer has no pad, end or unknown token
        # to pad with (a None there failed every padded batch)
        pad = self.tokenizer.pad_token_id
        self.pad_id: int = pad if isinstance(pad, int) else 0
        self.max_batch_tokens = max_batch_tokens or self._auto_batch_tokens()
        self.identity = {
            "backend": "hf",
            "model": model,
            "revision": revision or getattr(self.config, "_commit_hash", None),
            "fingerprint": _weights_fingerprint(model),
            "dtype": str(self.dtype).removeprefix("torch."),
            "device": self.device.type,
            "attn": attn,
            "layout": self._layout(),
            # never a token: the identity is recorded (config.json) and keys the cache
            **({"model_args": BackendConfig.redacted({"model_args": self.model_args})[
                "model_args"]} if self.model_args else {}),
        }
        # the date its chat template prints, pinned: recorded (and keying the cache) only for
        # a template that prints one, so other models' caches and folders stay as they were
        self.template_date = template_date or DEFAULT_TEMPLATE_DATE
        if prints_date(self.tokenizer):
            self.identity["template_date"] = self.template_date

    def _layout(self) -> str:
        """How rows are laid out and attended. Each way gives the same results to the last few
        bits, not bit for bit, so the cache keeps them apart."""
        parts = ["prefix-tree" if self.prefix_reuse else "whole-prompts", f"pad-{self.padding_side}"]
        if grouped_attention(self.attn, self.config):
            parts.append("grouped-eager")
        return "+".join(parts)

    @property
    def model(self) -> PreTrainedModel:
        """The weights, loaded on first use: a rerun whose requests are all in the cache never
        loads them (the tokenizer and config are enough to plan and key the requests)."""
        if self._model is None:
            import transformers

            try:
                model = transformers.AutoModelForCausalLM.from_pretrained(
                    self.name, revision=self.revision, dtype=self._load_dtype,
                    attn_implementation=attention_implementation(self.attn, self.config),
                    **self.model_args)
            except Exception as e:  # noqa: BLE001 - a damaged or hostile weights file raises
                # any type (UnpicklingError, RuntimeError, EOFError…): one line, naming it
                raise _load_error(self.name, e) from None
            # transformers declares PreTrainedModel.to through functools.wraps(nn.Module.to),
            # which type checkers read as unbound (the model its first argument); it is the
            # model's own to(), which moves it in place and returns it
            move = cast("Callable[[torch.device], PreTrainedModel]", model.to)
            self._model = move(self.device)
            # eval() is unannotated in transformers (an untyped call under --strict)
            self._model.eval()  # type: ignore[no-untyped-call]
        return self._model

    def _torch_dtype(self, dtype: str) -> torch.dtype | Literal["auto"]:
        """'auto' is the checkpoint's own dtype on a GPU and float32 on a CPU, where bfloat16
        matmuls are slow and lose precision that likelihood comparisons need."""
        import torch

        if dtype == "auto":
            return "auto" if self.device.type == "cuda" else torch.float32
        named: torch.dtype = getattr(torch, dtype)  # one of DTYPES (_check_options)
        return named

    # ---------------------------------------------------------------- prompts and tokens
    def render(self, prompt: Prompt) -> tuple[str, bool]:
        """The text the model sees, and whether the tokenizer should add its special tokens."""
        return render(self.tokenizer, prompt, self.identity["model"], self.template_date)

    def encode(self, text: str, special: bool) -> list[int]:
        ids: list[int] = self.tokenizer(text, add_special_tokens=special)["input_ids"]
        return ids

    def count_tokens(self, prompt: Prompt) -> int:
        return len(self.encode(*self.render(prompt)))

    def max_context(self) -> int | None:
        return getattr(self.config, "max_position_embeddings", None)

    def _score_tokens(self, request: ScoreNext) -> tuple[list[int], list[int]]:
        """Context ids and each candidate's first token id (:func:`..prompt_tokens.score_tokens`)."""
        return score_tokens(self.tokenizer, request, self.identity["model"], self.template_date)

    # ---------------------------------------------------------------- running requests
    # run_planned() takes ``needed``: the executor gives every request of a chunk, cached ones
    # too, so the prefix tree is planned as the clean run's (see tree.walk)
    plans_over_all = True
    cuts_context = True  # ScoreNext.max_length: prompt_tokens.score_tokens cuts the ids

    def run(self, requests: Sequence[Request],
            progress: Progress | None = None) -> Sequence[Response]:
        out = self.run_planned(requests, [True] * len(requests), progress)
        return [r if r is not None else Failed(ModelError("no response")) for r in out]

    def run_planned(self, requests: Sequence[Request], needed: Sequence[bool],
                    progress: Progress | None = None) -> list[Response | None]:
        """Each request's response (None where ``needed`` is False: cached, not run)."""
        out: list[Response | None] = [None] * len(requests)
        # every ScoreNext, cached ones too: its tree is planned over all (see tree.walk)
        scores = [i for i, r in enumerate(requests) if isinstance(r, ScoreNext)]
        generations = [i for i, r in enumerate(requests) if isinstance(r, Generate) and needed[i]]
        texts = [i for i, r in enumerate(requests) if isinstance(r, TextLogprobs) and needed[i]]
        def picked(kind: type[Q], which: list[int]) -> list[Q]:
            return only(kind, [requests[i] for i in which], "requests picked by their type")

        runs: tuple[tuple[list[int], Callable[[], Answers]], ...] = (
            (scores, lambda: self._run_scores(picked(ScoreNext, scores),
                                              [needed[i] for i in scores])),
            (generations, lambda: self._run_generations(picked(Generate, generations))),
            (texts, lambda: self._run_texts(picked(TextLogprobs, texts))))
        for which, run in runs:
            if not which:
                continue
            for k, resp in run():
                out[which[k]] = resp
                if progress:
                    progress(which[k], resp)
        return out

    def _run_texts(self, requests: list[TextLogprobs]) -> Answers:
        from .text import run_text_logprobs  # whole-text log-probs (contamination tests)

        return run_text_logprobs(self, requests)

    def _run_generations(self, requests: list[Generate]) -> Answers:
        from .generate import run_generations  # batched greedy decoding from the prefix cache

        return run_generations(self, requests)

    def _run_scores(self, requests: list[ScoreNext], needed: Sequence[bool]) -> Answers:
        """Every context forwarded along its prefix tree (planned over every request, the
        cached ones too); each needed request's log-probs read from the batch where its context
        ends."""
        import torch

        encoded: dict[int, tuple[list[int], list[int]]] = {}
        for i, r in enumerate(requests):  # a request that cannot run fails alone, with its reason
            try:
                encoded[i] = self._encode_checked(r)
            except LocalevalError as e:
                if needed[i]:
                    yield i, Failed(as_failure(e))  # the same on every run
        ok = list(encoded)
        contexts = [encoded[i][0] for i in ok]
        for batch in walk(self, plan(self, contexts), contexts,
                          needed=[needed[i] for i in ok]):
            ends = [(k, j) for k, node in enumerate(batch.nodes) for j in node.ends
                    if needed[ok[j]]]
            if not ends:
                continue
            rows = torch.tensor([k for k, _ in ends], device=self.device)
            logprobs = batch.logits[rows].log_softmax(-1).cpu()
            for row, (_, j) in zip(logprobs, ends):
                i = ok[j]
                read = self._score_response(requests[i], *encoded[i], row)
                if requests[i].positions is not None:
                    read = self._first_labelled(requests[i], *encoded[i], row, read)
                yield i, read

    def check_candidates(self, request: ScoreNext) -> str | None:
        """Why ``request``'s candidates cannot be read at one position (they share a first
        token, one has none), from the tokenizer alone, before any weights load; or None."""
        try:
            self._score_tokens(request)
        except LocalevalError as e:
            return str(e)
        return None

    def _encode_checked(self, request: ScoreNext) -> tuple[list[int], list[int]]:
        """(context ids, candidate first-token ids); LocalevalError when it cannot run."""
        ctx, targets = self._score_tokens(request)
        limit = self.max_context()
        if not ctx:
            raise LocalevalError("prompt has no tokens; there is no position to score after")
        if limit and len(ctx) > limit:
            raise OverContextError(f"prompt has {len(ctx)} tokens, over the model's "
                                 f"context of {limit}")
        # a first-label read asks for up to ``positions`` new tokens, which the authors' vLLM
        # server counted against its max_model_len: prompt + max_tokens over it is an HTTP 400
        # there (IRIS guard_models/llama_guard.py LlamaGuard: max_new_tokens=100), refused
        # here as a ContextOverflow, which guards/base.py refused scores so (issue 64 item 5)
        if limit and request.positions is not None and len(ctx) + request.positions > limit:
            raise OverContextError(f"prompt has {len(ctx)} tokens; with {request.positions} "
                                 f"more that is over the model's context of {limit}")
        return ctx, targets

    def _score_response(self, request: ScoreNext, ctx: list[int], targets: list[int],
                        logprobs: torch.Tensor) -> NextLogprobs:
        self.stats["requests"] += 1
        self.stats["prompt_tokens"] += len(ctx)
        values = {c: float(logprobs[t]) for c, t in zip(request.candidates, targets)}
        ranks: dict[str, int | None] | None = None
        if request.top is not None:  # the rank a top-k server would give: 1 + tokens above it
            ranks = self._ranks(request, targets, logprobs)
        return NextLogprobs(logprobs=dict(values), ranks=ranks, n_prompt_tokens=len(ctx))

    def _first_labelled(self, request: ScoreNext, ctx: list[int], targets: list[int],
                        logprobs: torch.Tensor, first: NextLogprobs) -> NextLogprobs:
        """``request.positions``: the first greedily generated position whose top
        ``request.top`` holds a candidate (IRIS ``guard_models/base.py``
        ``GuardLLM.complete``). The position after the prompt comes from the prefix tree; only
        when it holds none are the next ones decoded, one token at a time from the prompt's own
        cache, stopping at the first labelled position or an end-of-sequence token: the same
        verdict as generating all ``positions`` tokens, usually without decoding any."""
        passed = 0  # labelled positions passed (``request.labelled``)
        last: NextLogprobs | None = None  # the last labelled one (``labelled`` -1)
        if request.at == 0:
            return replace(first, position=0)
        if request.at is None and any(r is not None for r in (first.ranks or {}).values()):
            if request.labelled == 0:
                return replace(first, position=0)
            last, passed = replace(first, position=0), 1
        import torch

        from .generate import eos_ids

        eos = eos_ids(self)
        token, cache = int(logprobs.argmax()), None
        with torch.inference_mode():
            for p in range(1, request.positions or 1):
                if token in eos:
                    break
                ids = ctx + [token] if cache is None else [token]
                out = self.model(input_ids=torch.tensor([ids], device=self.device),
                                 use_cache=True, **{cache_argument(self.model): cache})
                self.stats["forwarded_tokens"] += len(ids)
                cache = returned_cache(out)
                row = out.logits[0, -1].float().log_softmax(-1).cpu()
                ranks = self._ranks(request, targets, row)
                read = replace(first, position=p, ranks=ranks, logprobs={
                    c: float(row[t]) for c, t in zip(request.candidates, targets)})
                if request.at is not None:
                    if p == request.at:
                        return read
                elif any(r is not None for r in ranks.values()):
                    if request.labelled == -1:
                        last = read
                    elif passed == request.labelled:
                        return read
                    passed += 1
                token = int(row.argmax())
        if last is not None:
            return last
        # no such labelled position: every rank None, ``position`` None
        return replace(first, ranks=dict.fromkeys(first.ranks or {}))

    @staticmethod
    def _ranks(request: ScoreNext, targets: list[int], logprobs: torch.Tensor
               ) -> dict[str, int | None]:
        """Each candidate's rank a top-k server would give (1 + tokens above it), None beyond
        ``request.top``."""
        return {c: rank if rank <= (request.top or 0) else None for c, rank in
                ((c, 1 + int((logprobs > logprobs[t]).sum())) for c, t in
                 zip(request.candidates, targets))}

    def _auto_batch_tokens(self) -> int:
        """A token budget per forward pass from free memory and the per-token cost of the model
        (KV cache + the widest activations), using a third of what is free."""
        import torch

        cfg = self.config

        def get(*names: str) -> int:
            """The first of the config's ``names`` it sets (to a non-zero value), else 0."""
            found: int = next((getattr(cfg, n) for n in names if getattr(cfg, n, None)), 0)
            return found

        hidden = get("hidden_size", "n_embd", "d_model") or 1024
        layers = get("num_hidden_layers", "n_layer") or 12
        heads = get("num_attention_heads", "n_head") or 16
        kv_heads = get("num_key_value_heads") or heads
        inter = get("intermediate_size", "n_inner") or 4 * hidden
        width = self.dtype.itemsize
        per_token = width * (2 * layers * kv_heads * (hidden // heads) + 4 * hidden + 2 * inter)
        if self.device.type == "cuda":
            free = torch.cuda.mem_get_info(self.device)[0]
        else:
            try:
                free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
            except (ValueError, OSError):
                free = 4 << 30
        return int(max(256, min(free // 3 // per_token, 1 << 17)))


def _check_device(device: str) -> None:
    """--device names a device this torch has (checked before any weights load)."""
    import torch

    try:
        where = torch.device(device)
    except RuntimeError:
        raise LocalevalError(f"--device {device!r} is not a device name; use auto, cpu, cuda, "
                             "cuda:1, …") from None
    if where.type != "cuda":
        return
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0 or (where.index or 0) >= count:
        raise LocalevalError(f"--device {device}: this machine's torch sees {count} CUDA "
                             "device(s); use --device cpu" + (f" or cuda:0 … cuda:{count - 1}"
                                                            if count else ""))


def _check_options(dtype: str, batch_size: int | str, padding_side: str) -> None:
    if dtype not in DTYPES:
        raise LocalevalError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPES)}")
    if batch_size != "auto" and (not isinstance(batch_size, int) or batch_size < 1):
        raise LocalevalError(f"batch size must be a positive integer or 'auto', not {batch_size!r}")
    if padding_side not in ("right", "left"):
        raise LocalevalError(f"padding side must be 'right' or 'left', not {padding_side!r}")


def _load_error(model: str, error: Exception) -> LocalevalError:
    text = str(error).strip()
    first = text.splitlines()[0][:300] if text else type(error).__name__
    return LocalevalError(f"cannot load model {model!r}: {first} (pass hf:<hub id> or "
                          "hf:<folder with config.json and weights>; for gated models run "
                          "`hf auth login` first)")


# What a local model folder holds that changes what the model is asked or answers: weights,
# configs, tokenizer vocabularies (.model, .txt merges and vocab, .tiktoken), the chat template
# (chat_template.jinja) and remote code (.py)
MODEL_FILES = (".safetensors", ".bin", ".json", ".model", ".gguf", ".jinja", ".txt", ".tiktoken",
               ".py")


def _weights_fingerprint(model: str) -> str | None:
    """For a local folder, a hash of the names, sizes and mtimes of the files the model reads
    (:data:`MODEL_FILES`), so a retrained model or an edited chat template in the same folder
    never hits an old cache entry. Hub models are keyed by revision."""
    path = Path(model)
    if not path.is_dir():
        return None
    h = hashlib.sha256()
    for f in sorted(path.iterdir()):
        if f.suffix in MODEL_FILES:
            st = f.stat()
            h.update(f"{f.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]

