"""The request kinds (score the next token, generate, a whole text's token log-probs, embed,
moderate), the response, and the backend protocol.

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
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, TypedDict

from .failures import RequestFailure, failure_from


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
    kind: str = field(default="score_next", init=False)

    def __post_init__(self):
        if self.top is not None and (not isinstance(self.top, int) or self.top < 1):
            raise ValueError(f"ScoreNext.top must be a positive integer, not {self.top!r}")


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
    kind: str = field(default="generate", init=False)

    def __post_init__(self):
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


@dataclass
class Response:
    """What a backend returns for one request. ``error`` is set (and nothing else) on failure."""

    logprobs: dict[str, float] | None = None  # ScoreNext: candidate -> log-prob
    # ScoreNext with ``top`` = k: candidate -> its 1-based rank at the position (1 = the most
    # likely token), None when it is not among the top k
    ranks: dict[str, int | None] | None = None
    text: str | None = None  # Generate: the generated text
    embedding: list[float] | None = None  # Embed: the vector
    raw: dict | None = None  # Moderate: the provider's reply, as it came
    token_logprobs: list[float] | None = None  # TextLogprobs: per token after the first
    token_means: list[float] | None = None  # TextLogprobs: E[log p] per position, or None
    token_stds: list[float] | None = None  # TextLogprobs: its standard deviation, or None
    n_prompt_tokens: int | None = None
    n_completion_tokens: int | None = None  # tokens generated, where the backend counts them
    n_cached_tokens: int | None = None  # of the prompt's, served from the provider's own cache
    error: str | None = None
    # With ``error``: True when the request fails the same way every time (its candidates, its
    # length), so a rerun cannot help; None when a rerun may succeed (a timeout, a dropped
    # connection, a server error) or the backend cannot tell.
    permanent: bool | None = None
    failure: str | None = None  # with ``error``: its kind (backends/failures.py)
    scoring: str | None = None  # ScoreNext on a server: "top-k" or "echo" (how it was read)

    @classmethod
    def failed(cls, reason: RequestFailure) -> Response:
        """A failed request, by the type of its failure."""
        return cls(error=reason.message, permanent=reason.permanent, failure=reason.kind)

    @property
    def reason(self) -> RequestFailure | None:
        """Why the request failed, as its type (None when it did not)."""
        return None if self.error is None else failure_from(self.error, self.failure)

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, data: dict) -> Response:
        return cls(**data)


def request_fields(request: Request) -> dict:
    """The request as a dict, without a greedy ``Generate``'s ``sample`` (None) and an unset
    ``add_special_tokens``: such a request keys the cache as it did before those fields
    existed."""
    fields = asdict(request)
    fields.pop("echo", None)  # how a ScoreNext may be read, not what it asks
    for late in ("sample", "add_special_tokens", "decoding", "top"):  # unset: the key before
        if late in fields and fields[late] is None:
            del fields[late]
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


def request_key(identity: dict, request: Request) -> str:
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


class Backend(Protocol):
    """Anything that can execute requests. ``identity`` (model, revision, dtype, …) keys the cache
    and is written to the run's config; it must never contain a secret."""

    identity: dict

    def run(self, requests: list[Request], progress=None) -> list[Response]:
        """Execute requests in any internal order; return responses in the input order. Call
        ``progress(i, response)`` as request ``i`` finishes (from any thread), so the run stores
        it at once and a kill loses only what is in flight."""
        ...

    def max_context(self) -> int | None: ...

    def count_tokens(self, prompt: Prompt) -> int: ...


class BackendBase:
    """What a backend may offer beyond :meth:`Backend.run`, declared once with its default (as
    httpx's ``BaseTransport`` gives ``close()`` one), so no caller probes with ``hasattr``. The
    built-in backends subclass it and override what they offer; a Python caller's own backend
    object is wrapped in :class:`Adapted` where it enters a run."""

    identity: dict
    # plans over every request of a run at once (the hf prefix tree): a resumed run gets the
    # same chunks as a clean one (store/executor.py)
    plans_over_all: bool = False
    stats: Mapping[str, Any] = MappingProxyType({})  # counters for the run's timing record
    chunk: int | None = None  # requests per call it wants (--batch: all of them), else the run's

    @classmethod
    def preflight(cls, target: str, config: Any) -> None:
        """Cheap checks of ``target`` and its options before any data or model loads (a model
        folder's weights, a server URL's port); by default none."""

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

    def keep_batches(self, ledger: Any) -> None:
        """Where a backend that sends provider batches (``--batch``) keeps their ids: the run
        folder's ledger, so a killed run re-attaches; by default it sends none."""

    def close(self) -> None:
        """Let go of what the backend holds (an engine and its processes) now, not at
        interpreter exit; a run calls it for each backend it built when it ends, finished or
        not. By default nothing; a second call does nothing."""

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


class Adapted(BackendBase):
    """A Python caller's own backend object (anything with ``identity`` and ``run``), with
    :class:`BackendBase`'s defaults for what it does not define: the one place that looks."""

    def __init__(self, backend: Any):
        if not callable(getattr(backend, "run", None)):
            raise TypeError(f"a backend needs a run(requests) method; {backend!r} has none")
        self.wrapped = backend
        self.identity = backend.identity
        for name in ("max_context", "count_tokens", "check_candidates", "plans_over_all",
                     "stats", "chunk", "keep_batches", "close"):
            if hasattr(backend, name):
                setattr(self, name, getattr(backend, name))

    def run(self, requests: list[Request], progress=None, **kwargs) -> list[Response]:
        return self.wrapped.run(requests, progress, **kwargs)


def with_defaults(backend: Any) -> BackendBase:
    """``backend`` as a :class:`BackendBase` (a built-in one as it is)."""
    return backend if isinstance(backend, BackendBase) else Adapted(backend)


# Runs requests (through the cache, with progress) and returns responses in the same order:
# what a task or a guard is handed, so neither needs to know the backend or the cache.
Execute = Callable[[list[Request]], list[Response]]


def execute_role(execute: Execute, role: str) -> Execute | None:
    """The run's ``execute`` for the model of ``role`` (a judge, a translator): its requests go
    through the run's cache under that model's identity. None outside a run, or for a role the
    run has no model for."""
    get = getattr(execute, "role", None)
    return get(role) if get else None


def execute_on(execute: Execute, backend: Backend) -> Execute:
    """An ``execute`` for another backend (a helper model, such as X-Guard's translator): the
    run's cache and progress when the run's ``execute`` offers them (``execute.on``), else the
    backend run directly."""
    on = getattr(execute, "on", None)
    return on(backend) if on else (lambda requests: backend.run(requests))
