"""The two request kinds every benchmark reduces to, the response, and the backend protocol.

A prompt is a plain string (fed as is) or a list of chat messages, which the backend renders with
its own chat template. A final ``assistant`` message is a prefill: the backend renders the
messages before it with the generation prompt and appends the prefill text, so the model continues
it (the TMLU paper prefills ``正確答案：(`` this way).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Protocol, TypedDict

from ..errors import LocalevalError


class Message(TypedDict):
    role: str
    content: str


Prompt = str | list[Message]


@dataclass(frozen=True)
class ScoreNext:
    """Log-probabilities of each candidate continuation's first token, right after ``prompt``.

    The candidates' first tokens are taken from tokenising prompt + candidate and must be
    distinct. The log-probs are over the whole vocabulary (not renormalised over candidates).
    """

    prompt: Prompt
    candidates: tuple[str, ...]
    kind: str = field(default="score_next", init=False)


@dataclass(frozen=True)
class Generate:
    """Greedy generation of at most ``max_tokens`` tokens, cut at the first stop string."""

    prompt: Prompt
    max_tokens: int = 256
    stop: tuple[str, ...] = ()
    kind: str = field(default="generate", init=False)


Request = ScoreNext | Generate


@dataclass
class Response:
    """What a backend returns for one request. ``error`` is set (and nothing else) on failure."""

    logprobs: dict[str, float] | None = None  # ScoreNext: candidate -> log-prob
    text: str | None = None  # Generate: the generated text
    n_prompt_tokens: int | None = None
    error: str | None = None

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, data: dict) -> Response:
        return cls(**data)


def request_key(identity: dict, request: Request) -> str:
    """A stable cache key: the backend's identity plus the request, hashed."""
    payload = json.dumps([identity, asdict(request)], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


class Backend(Protocol):
    """Anything that can execute requests. ``identity`` (model, revision, dtype, …) keys the cache
    and is written to the run's config; it must never contain a secret."""

    identity: dict

    def run(self, requests: list[Request], progress=None) -> list[Response]:
        """Execute requests in any internal order; return responses in the input order."""
        ...

    def max_context(self) -> int | None: ...

    def count_tokens(self, prompt: Prompt) -> int: ...


BACKEND_KINDS = ("hf", "openai")


def parse_backend_spec(spec: str) -> tuple[str, str]:
    """``hf:Qwen/Qwen2.5-7B-Instruct`` -> ("hf", "Qwen/Qwen2.5-7B-Instruct"), or a clear error."""
    kind, sep, target = spec.partition(":")
    if not sep or not target:
        raise LocalevalError(f"model {spec!r} needs a backend prefix, e.g. hf:Qwen/Qwen2.5-0.5B, "
                             "hf:/path/to/model or openai:<served model name>")
    if kind not in BACKEND_KINDS:
        raise LocalevalError(f"unknown backend {kind!r} in {spec!r}; available: "
                             f"{', '.join(BACKEND_KINDS)}")
    return kind, target


def load_backend(spec: str, **options) -> Backend:
    """Make a backend from ``kind:target``, e.g. ``hf:Qwen/Qwen2.5-7B-Instruct`` or ``hf:/models/x``."""
    kind, target = parse_backend_spec(spec)
    if kind == "openai":
        from .openai_compat import OpenAIBackend as cls
    else:
        from .hf import HFBackend as cls
    import inspect

    # The CLI passes every backend option; each backend takes the ones it has.
    accepted = inspect.signature(cls).parameters
    return cls(target, **{k: v for k, v in options.items() if k in accepted and v is not None})
