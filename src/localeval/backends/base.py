"""The request kinds (score the next token, generate, a whole text's token log-probs, embed,
moderate), the answer type of each and the failure, the one backend type, and the executor
tasks and guards are handed.

A prompt is a plain string (fed as is) or a list of chat messages, which the backend renders with
its own chat template. A final ``assistant`` message is a prefill: the backend renders the
messages before it with the generation prompt and appends the prefill text, so the model continues
it (the TMLU paper prefills ``正確答案：(`` this way).

(over 300 lines: the request kinds, the response and what a backend declares it offers are the
one contract between tasks and backends, read together.)
"""

from __future__ import annotations

import hashlib
import json
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from types import MappingProxyType
from typing import Any, Literal, Protocol, TypedDict, TypeVar

from ..errors import LocalevalError
from .failures import BadReply, RequestFailure, failure_from


class Message(TypedDict):
    role: str
    content: str


Prompt = str | list[Message]

# A last message of this role is text appended after the messages before it, rendered by the
# model's chat template without a generation prompt: a guard whose authors add a header of
# their own after the template (IRIS sealion_guard.py SealionGuard._apply_safeguard_template
# appends "<|start_header_id|>model<|end_header_id|>\n\n"). Local backends only.
AFTER_TEMPLATE = "after-template"


@dataclass(frozen=True)
class ScoreNext:
    """Log-probabilities of each candidate continuation's first token, right after ``prompt``.

    The candidates' first tokens are taken from tokenising prompt + candidate and must be
    distinct. The log-probs are over the whole vocabulary (not renormalised over candidates).
    ``add_special_tokens``: whether a plain-string prompt gets the tokenizer's special tokens
    (its BOS); a chat prompt's template places them itself.
    ``echo``: a server may read it from the echoed log-probs of prompt + candidate (the
    ``--scoring`` mode decides, :mod:`.echo_scoring`); False keeps it to the next token's top
    log-probs (guards: their authors' rule). How it is read, not what is asked: out of the key.
    """

    prompt: Prompt
    candidates: tuple[str, ...]
    add_special_tokens: bool = True
    echo: bool = False
    # k: also say where each candidate ranks at that position over the whole vocabulary
    # (``Response.ranks``, None beyond the k-th), so a guard can keep only the labels among the
    # top k log-probs as the authors' code does (IRIS guard_models/base.py GuardLLM.complete).
    top: int | None = None
    # n: the context cut from the left to its last n - 1 tokens before the candidate is read
    # (MiuLab/TMLU model.py HFLM_transformers.encode_pair with --max_length n, a one-token
    # letter); None: nothing cut. Token-level backends only (``Backend.cuts_context``).
    max_length: int | None = None
    # n: read not the position right after the prompt but the first of up to n greedily
    # generated positions whose top ``top`` log-probs hold a candidate, as the authors' guards
    # do (IRIS guard_models/base.py GuardLLM.complete keeps the first position with a label
    # among the generated ones, max_new_tokens=100 in llm_guard.py / llama_guard.py). The
    # answer says which position (``NextLogprobs.position``). None: the position after the
    # prompt, as before (and the cache key before the field existed).
    positions: int | None = None
    # with ``positions``: the candidates' log-probs at the position read are wanted over the
    # whole vocabulary (a guard's label_scores=full), not only those among its top ``top``. A
    # server then reads that position again alone with --top-logprobs (:mod:`.ranked_reading`)
    # instead of asking every generated position for them all. False: out of the cache key.
    whole_vocabulary: bool = False
    # with ``positions``: how many labelled positions to pass before the one read (0: the
    # first). IRIS ``guard_models/poly_guard.py:127`` ``PolyGuard.predict`` reads a response's
    # verdict at ``pred_labels[2]``, the third position of the whole answer whose top k holds
    # a label (issue 64 item 2). 0: out of the cache key. -1: the last of them (Parallax-AI
    # c853033 ``polyguard_module.py:14-16`` reads a response's verdict there, issue 72).
    labelled: int = 0
    # with ``positions``: read the generated position of this index itself, whatever its top
    # holds (Parallax-AI c853033 ``polyguard_module.py:12``: a prompt's verdict at
    # ``logprobs[5]``); fewer positions generated: none read. None: out of the cache key.
    at: int | None = None
    kind: str = field(default="score_next", init=False)

    def __post_init__(self) -> None:
        if self.top is not None and (not isinstance(self.top, int) or self.top < 1):
            raise ValueError(f"ScoreNext.top must be a positive integer, not {self.top!r}")
        if self.max_length is not None and (not isinstance(self.max_length, int)
                                            or self.max_length < 2):
            raise ValueError(f"ScoreNext.max_length must be an integer of at least 2, not "
                             f"{self.max_length!r}")
        if self.positions is not None and (not isinstance(self.positions, int)
                                           or self.positions < 1 or self.top is None):
            raise ValueError(f"ScoreNext.positions must be a positive integer with top set, "
                             f"not {self.positions!r} (top {self.top!r})")
        if self.whole_vocabulary and self.positions is None:
            raise ValueError("ScoreNext.whole_vocabulary is for a read at the first labelled "
                             "of several positions: set positions too")
        if self.labelled and (not isinstance(self.labelled, int) or self.labelled < -1
                              or self.positions is None or self.whole_vocabulary):
            raise ValueError(f"ScoreNext.labelled must be a non-negative integer (or -1, the "
                             f"last) with positions set and without whole_vocabulary, not "
                             f"{self.labelled!r}")
        if self.at is not None and (not isinstance(self.at, int) or self.at < 0
                                    or self.positions is None or self.at >= self.positions
                                    or self.whole_vocabulary or self.labelled):
            raise ValueError(f"ScoreNext.at must be a position index below positions, without "
                             f"labelled or whole_vocabulary, not {self.at!r}")


GENERATION_CONFIG = "generation_config"


@dataclass(frozen=True)
class Generate:
    """Greedy generation of at most ``max_tokens`` tokens, cut at the first stop string.

    ``sample`` = k asks instead for the k-th of independent draws with the model's own default
    sampling: a server's defaults (no temperature is sent), a local model's generation config
    (seeded by the prompt and k, so a rerun draws the same text). Each draw is its own request,
    so the cache keeps every draw. The authors' LLM-safety responses are drawn this way (IRIS
    ``scripts/inference_llm.py``).
    """

    prompt: Prompt
    max_tokens: int = 256
    stop: tuple[str, ...] = ()
    sample: int | None = None
    # None: the tokenizer's special tokens for a plain string, none for a rendered chat prompt
    # (its template holds them). True: added to the rendered chat text too, as MiuLab/TMLU
    # model.py HFLM_vLLM.generate does (vLLM tokenises the template's text with special tokens:
    # two BOS where the template holds one).
    add_special_tokens: bool | None = None
    # None: greedy, or a draw with vLLM's defaults when ``sample`` is set. "generation_config":
    # as transformers' generate() called without do_sample (IRIS x_guard.py
    # XGuard.evaluate_guard, llm_guard.py GPTOSS._complete): the model's generation_config
    # decides whether and how to sample; a draw is seeded by the prompt and ``sample`` (0 if
    # unset), so a rerun draws the same text.
    decoding: str | None = None
    # the run's --seed (issue 69): a draw is seeded by its prompt, ``sample`` and this; None, as
    # before the flag: by its prompt and ``sample`` alone (and the cache key is unchanged)
    seed: int | None = None
    kind: str = field(default="generate", init=False)

    def __post_init__(self) -> None:
        if self.decoding not in (None, GENERATION_CONFIG):
            raise ValueError(f"Generate.decoding must be None or {GENERATION_CONFIG!r}, not "
                             f"{self.decoding!r}")
        if not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            # A budget of 0 would still decode one token on the hf backend: refuse it here.
            raise ValueError(f"Generate.max_tokens must be a positive integer, not "
                             f"{self.max_tokens!r}")


@dataclass(frozen=True)
class TextLogprobs:
    """Per token of ``text`` (tokenised with the tokenizer's defaults), after the first: the
    log-prob of the actual token given everything before it, and where the backend can give
    them, the mean and standard deviation of log p under the model's next-token distribution at
    that position (E[log p] and sqrt(E[(log p)^2] - E[log p]^2), for Min-K%++)."""

    text: str
    kind: str = field(default="text_logprobs", init=False)


@dataclass(frozen=True)
class Embed:
    """A sentence embedding of ``text`` (an embedding backend's one request kind)."""

    text: str
    kind: str = field(default="embed", init=False)


@dataclass(frozen=True)
class Moderate:
    """A moderation API's verdict on ``text`` (a ``moderation:`` backend's one request kind):
    ``role`` is "user" for a prompt, "assistant" for a model's response; ``settings`` are the
    provider's request options (e.g. ``(("outputType", "EightSeverityLevels"),)``), part of the
    cache key."""

    text: str
    role: str = "user"
    settings: tuple[tuple[str, str], ...] = ()
    kind: str = field(default="moderate", init=False)


Request = ScoreNext | Generate | TextLogprobs | Embed | Moderate


# how a server's ScoreNext answer was read: its top-k, echoed, or its top-k because --scoring
# auto could not tell whether its echo reads right (a server that ignores echo, issue 63), or
# each option's first token asked by id (vLLM's logprob_token_ids, issue 65)
ScoringMode = Literal["top-k", "echo", "top-k (echo unproven)", "ids"]
UNPROVEN: ScoringMode = "top-k (echo unproven)"


@dataclass(frozen=True, kw_only=True)
class Answered:
    """What every answer may say of its tokens, where its backend counts them (None: not
    counted). The response type of each request kind adds what that kind returns."""

    n_prompt_tokens: int | None = None
    n_completion_tokens: int | None = None  # tokens generated
    n_cached_tokens: int | None = None  # of the prompt's, served from the provider's own cache


@dataclass(frozen=True, kw_only=True)
class NextLogprobs(Answered):
    """A :class:`ScoreNext`'s answer: candidate -> log-prob (None: not among the top log-probs
    a server gave)."""

    logprobs: dict[str, float | None]
    # with ``ScoreNext.top`` = k: candidate -> its 1-based rank at the position (1 = the most
    # likely token), None when it is not among the top k
    ranks: dict[str, int | None] | None = None
    scoring: ScoringMode | None = None  # on a server: read from its top-k, or echoed
    # with ``ScoreNext.positions``: the 0-based generated position read (the first whose top
    # k held a candidate); None when none of the positions generated held one (``ranks`` are
    # then all None and the values are the first position's)
    position: int | None = None


@dataclass(frozen=True, kw_only=True)
class Generated(Answered):
    """A :class:`Generate`'s answer: the generated text."""

    text: str


@dataclass(frozen=True, kw_only=True)
class TokenLogprobs(Answered):
    """A :class:`TextLogprobs`' answer: per token after the first, its log-prob, and where the
    backend gives them, E[log p] and its standard deviation at that position."""

    token_logprobs: list[float]
    token_means: list[float] | None = None
    token_stds: list[float] | None = None


@dataclass(frozen=True, kw_only=True)
class Embedding(Answered):
    """An :class:`Embed`'s answer: the vector."""

    embedding: list[float]


@dataclass(frozen=True, kw_only=True)
class Moderation(Answered):
    """A :class:`Moderate`'s answer: the provider's reply, as it came."""

    raw: dict[str, Any]


@dataclass(frozen=True)
class Failed:
    """A request that failed, and why, as its type (:mod:`.failures`: whether a rerun may
    help, how tables name it)."""

    reason: RequestFailure

    @property
    def error(self) -> str:
        return self.reason.message


# What a backend returns for one request: the answer of its kind, or why it failed.
Answer = NextLogprobs | Generated | TokenLogprobs | Embedding | Moderation
Response = Answer | Failed


def error_of(response: Response) -> str | None:
    """Why the request failed (None when it did not)."""
    return response.error if isinstance(response, Failed) else None


def text_of(response: Response) -> str | None:
    """The generated text of a :class:`Generate`'s answer (None: it failed, or another kind)."""
    return response.text if isinstance(response, Generated) else None


# The answer type of each request kind (a Failed answers any).
ANSWER_OF: dict[type[Request], type[Answer]] = {
    ScoreNext: NextLogprobs, Generate: Generated, TextLogprobs: TokenLogprobs,
    Embed: Embedding, Moderate: Moderation}


def answer_type(request: Request) -> type[Answer]:
    """The type a successful answer to ``request`` has."""
    return ANSWER_OF[type(request)]


def response_json(response: Response) -> dict[str, Any]:
    """The response as JSON data: its fields that are set, as the cache stores an answer and a
    guard's samples keep its raw responses. A failure is its message (``error``), its kind
    (``failure``) and ``permanent`` when a rerun fails the same way."""
    if isinstance(response, Failed):
        out: dict[str, Any] = {"error": response.reason.message, "failure": response.reason.kind}
        if response.reason.permanent is not None:
            out["permanent"] = response.reason.permanent
        return out
    return {k: v for k, v in asdict(response).items() if v is not None}


def response_from_json(request: Request, data: dict[str, Any]) -> Response:
    """A response read back from JSON (:func:`response_json`; a cache entry, a folder's raw
    guard output): the answer type of ``request``, or a failure. TypeError when ``data`` has
    fields that type does not (a damaged entry)."""
    if "error" in data:
        reason = failure_from(str(data["error"]), data.get("failure"))
        return Failed(reason)
    return answer_type(request)(**data)


def request_fields(request: Request) -> dict[str, Any]:
    """The request as a dict, without a greedy ``Generate``'s ``sample`` (None) and an unset
    ``add_special_tokens``: such a request keys the cache as it did before those fields
    existed."""
    fields = asdict(request)
    fields.pop("echo", None)  # how a ScoreNext may be read, not what it asks
    # unset: the key before those fields existed
    for late in ("sample", "add_special_tokens", "decoding", "top", "max_length", "positions",
                 "seed", "at"):
        if late in fields and fields[late] is None:
            del fields[late]
    if fields.get("whole_vocabulary") is False:
        del fields["whole_vocabulary"]
    if fields.get("labelled") == 0:
        del fields["labelled"]
    return fields


def distinct(requests: list[Request]) -> tuple[list[int], list[int]]:
    """Identical requests run once: the index of the first of each distinct request, and for
    every request the position of its first in that list."""
    firsts: list[int] = []
    where: list[int] = []
    seen: dict[str, int] = {}
    for i, request in enumerate(requests):
        key = json.dumps(request_fields(request), sort_keys=True, ensure_ascii=False)
        if key not in seen:
            seen[key] = len(firsts)
            firsts.append(i)
        where.append(seen[key])
    return firsts, where


def draw_key(ids: list[int], request: Generate) -> bytes:
    """What seeds a local model's draw (hf:, vllm:): the prompt's tokens, the draw's number and
    the run's --seed where given (without it, the key of every run before the flag)."""
    return json.dumps([ids, request.sample or 0]
                      + ([request.seed] if request.seed is not None else [])).encode()


def server_seed(request: Generate) -> int | None:
    """The ``seed`` a server's draw is asked with: one per --seed and draw number (None without
    --seed: the server's own unseeded sampling, as before)."""
    if request.seed is None:
        return None
    key = json.dumps([request.seed, request.sample or 0]).encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:4], "big") >> 1


def request_key(identity: dict[str, Any], request: Request) -> str:
    """A stable cache key: the backend's identity plus the request, hashed."""
    payload = json.dumps([identity, request_fields(request)], sort_keys=True,
                         ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


def candidate_problem(backend: Backend, requests: list[Request]) -> str | None:
    """Why the ScoreNext requests among ``requests`` can never run on ``backend``, seen in its
    tokenizer before any forward pass (two candidates that share a first token, one with no
    tokens), or None. The first request of each distinct candidate tuple is asked: candidates
    are the run's configuration, the same for every prompt, so a clash there is a clash
    everywhere; a later request that still fails alone is a failure marked ``permanent``. A
    backend that can tell only by running (a server) says None to each."""
    check = with_defaults(backend).check_candidates
    seen: set[tuple[str, ...]] = set()
    for request in requests:
        if isinstance(request, ScoreNext) and request.candidates not in seen:
            seen.add(request.candidates)
            problem = check(request)
            if problem:
                return problem
    return None


# ``progress(i, response)``: request ``i`` of a backend call has finished (from any thread).
Progress = Callable[[int, Response], None]


class Backend(ABC):
    """The one backend type: :meth:`run` executes requests, and what a backend may offer beyond
    it is declared here once with its default (as httpx's ``BaseTransport`` gives ``close()``
    one), so no caller probes with ``hasattr``. The built-in backends subclass it; a Python
    caller's own backend object is wrapped in :class:`Adapted` where it enters a run.

    ``identity`` (model, revision, dtype, …) keys the cache and is written to the run's config;
    it must never contain a secret."""

    identity: dict[str, Any]
    # plans over every request of a run at once (the hf prefix tree): a resumed run gets the
    # same chunks as a clean one (store/executor.py), through :meth:`run_planned`
    plans_over_all: bool = False
    # cuts a ScoreNext context to its ``max_length`` in tokens (the local backends, which
    # tokenise it themselves; a server is sent text)
    cuts_context: bool = False
    stats: Mapping[str, Any] = MappingProxyType({})  # counters for the run's timing record
    chunk: int | None = None  # requests per call it wants (--batch: all of them), else the run's
    # takes every request still to run in one call and spreads them over workers of its own
    # (--cluster: backends/cluster.py), cut into the chunks the run would make
    spreads: bool = False

    @abstractmethod
    def run(self, requests: Sequence[Request],
            progress: Progress | None = None) -> Sequence[Response]:
        """Execute requests in any internal order; return responses in the input order. Call
        ``progress(i, response)`` as request ``i`` finishes (from any thread), so the run stores
        it at once and a kill loses only what is in flight."""

    def run_planned(self, requests: Sequence[Request], needed: Sequence[bool],
                    progress: Progress | None = None) -> list[Response | None]:
        """A backend that ``plans_over_all``: every request of a chunk, cached ones too, with
        the ones to compute flagged ``needed`` (the others' responses are None). By default,
        the needed ones run."""
        which = [i for i, flag in enumerate(needed) if flag]
        report = None if progress is None else (lambda k, r: progress(which[k], r))
        answers = self.run([requests[i] for i in which], report)
        out: list[Response | None] = [None] * len(requests)
        for i, answer in zip(which, answers, strict=True):
            out[i] = answer
        return out

    @classmethod
    def preflight(cls, target: str, config: Any) -> None:
        """Cheap checks of ``target`` and its options before any data or model loads (a model
        folder's weights, a server URL's port); by default none."""
        return None  # a default, not a method to implement

    def max_context(self) -> int | None:
        """The model's context length in tokens; None when unknown."""
        return None

    def count_tokens(self, prompt: Prompt) -> int | None:
        """The prompt's length in tokens; None when the backend cannot count."""
        return None

    def check_candidates(self, request: ScoreNext) -> str | None:
        """Why ``request``'s candidates can never be scored, seen in the tokenizer before any
        forward pass; None when fine or when only running can tell (a server)."""
        return None

    def cost_bound(self, request: Request) -> tuple[int, int] | None:
        """At most how many (prompt, completion) tokens ``request`` may be billed, for a
        budget to cost a provider batch before it is submitted; None when unknown."""
        return None

    def keep_batches(self, ledger: Any) -> None:
        """Where a backend that sends provider batches (``--batch``) keeps their ids: the run
        folder's ledger, so a killed run re-attaches; by default it sends none."""
        return None  # a default, not a method to implement

    def close(self) -> None:
        """Let go of what the backend holds (an engine and its processes) now, not at
        interpreter exit; a run calls it for each backend it built when it ends, finished or
        not. By default nothing; a second call does nothing."""
        return None  # a default, not a method to implement

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()




class Adapted(Backend):
    """A Python caller's own backend object (anything with ``identity`` and ``run``), with
    :class:`Backend`'s defaults for what it does not define: the one place that looks. Its
    ``run`` returns this module's response types, or their JSON form (:func:`response_json`,
    a dict), which is read here into the type of its request."""

    def __init__(self, backend: Any):
        if not callable(getattr(backend, "run", None)):
            raise TypeError(f"a backend needs a run(requests) method; {backend!r} has none")
        self.wrapped = backend
        self.identity = backend.identity
        for name in ("max_context", "count_tokens", "check_candidates", "plans_over_all",
                     "stats", "chunk", "keep_batches", "close", "run_planned", "cost_bound"):
            if hasattr(backend, name):
                setattr(self, name, getattr(backend, name))

    def run(self, requests: Sequence[Request],
            progress: Progress | None = None) -> Sequence[Response]:
        def report(i: int, response: Any) -> None:
            if progress is not None:
                progress(i, _typed(requests[i], response))

        out = self.wrapped.run(list(requests), report if progress is not None else None)
        return [_typed(q, r) for q, r in zip(requests, out, strict=True)]


def _typed(request: Request, response: Any) -> Response:
    """A caller's backend's response as its type (a dict is read as :func:`response_json`'s
    form); anything else is a failed request saying what came."""
    if isinstance(response, Failed | NextLogprobs | Generated | TokenLogprobs | Embedding
                  | Moderation):
        return response
    if isinstance(response, dict):
        try:
            return response_from_json(request, response)
        except TypeError as e:
            return Failed(BadReply(f"invalid reply from the backend: {e}"))
    return Failed(BadReply(f"invalid reply from the backend: {type(response).__name__}, not a "
                           "response"))


Q = TypeVar("Q", ScoreNext, Generate, TextLogprobs, Embed, Moderate)


def only(kind: type[Q], requests: Sequence[Request], refusal: str) -> list[Q]:
    """``requests``, each of ``kind``, or LocalevalError ``refusal`` (a backend that runs one
    kind of request, given another)."""
    out = [r for r in requests if isinstance(r, kind)]
    if len(out) < len(requests):
        raise LocalevalError(refusal)
    return out


def with_defaults(backend: Any) -> Backend:
    """``backend`` as a :class:`Backend` (a built-in one as it is)."""
    return backend if isinstance(backend, Backend) else Adapted(backend)


class Executor(Protocol):
    """Runs requests (through the cache, with progress) and returns responses in the same
    order: what a task or a guard is handed, so neither needs to know the backend or the cache.
    ``role(name)`` is the same for the run's model of that role (a judge, a translator), None
    when the run has none; ``on(backend)`` for another backend (a guard's helper model)."""

    def __call__(self, requests: Sequence[Request]) -> list[Response]: ...

    def role(self, name: str) -> Executor | None: ...

    def on(self, backend: Backend) -> Executor: ...


# Names plugins may still import, each with a DeprecationWarning: BackendBase (the name the
# built-in backends knew Backend by) and Execute (the name tasks and guards knew Executor by).
DEPRECATED = {"BackendBase": ("Backend", Backend), "Execute": ("Executor", Executor)}


def __getattr__(name: str) -> Any:
    if name in DEPRECATED:
        current, value = DEPRECATED[name]
        warnings.warn(f"localeval.backends.base.{name} is deprecated: use {current}",
                      DeprecationWarning, stacklevel=2)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Direct:
    """An :class:`Executor` outside a run: the backend run directly, no cache, no roles."""

    def __init__(self, backend: Any):
        self.backend = with_defaults(backend)

    def __call__(self, requests: Sequence[Request]) -> list[Response]:
        return list(self.backend.run(requests))

    def role(self, name: str) -> Executor | None:
        return None

    def on(self, backend: Backend) -> Executor:
        return Direct(backend)
