"""Token counts a server reports (OpenAI-compatible ``usage``), read and checked where they
enter: ``prompt_tokens``, ``completion_tokens`` and the provider's own prompt cache,
``prompt_tokens_details.cached_tokens`` (OpenAI; vLLM reports it with
``--enable-prompt-tokens-details``). A server that sends no ``usage`` leaves them unknown
(None); a count that is not a non-negative integer is an invalid reply, never a number, and so
is one beyond the model's context (the ``max_model_len`` a server's ``/models`` reports; where
it reports none, beyond :data:`MAX_TOKEN_COUNT`): such a count would be priced as it came
(10**30 tokens cost 1.2e25) or overflow a float (10**400)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, TypeVar

from .base import Failed, Response

R = TypeVar("R", bound=Response)

# A bound on any one request's tokens where the server reports no context length: 10**8, ten
# times the longest context served today (10M tokens), so no honest count reaches it.
MAX_TOKEN_COUNT = 10**8


class UsageError(ValueError):
    """A ``usage`` field that is not a count of tokens."""


@dataclass(frozen=True)
class Tokens:
    """One reply's token counts (None: not reported)."""

    prompt: int | None = None
    completion: int | None = None
    cached: int | None = None


def shown(value: int) -> str:
    """A count as the error names it: a power of ten as ``10**k``, a long one cut short."""
    text = str(value)
    if len(text) > 6 and text.strip("0") == "1":
        return f"10**{len(text) - 1}"
    return text if len(text) <= 20 else f"{text[:6]}… ({len(text)} digits)"


def _count(value: Any, name: str, context: int | None = None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"usage.{name} is {value!r}, not a count of tokens")
    if context is not None and value > context:
        raise UsageError(f"usage.{name} is {shown(value)}, beyond the model's context of "
                         f"{context} tokens")
    if value > MAX_TOKEN_COUNT:
        raise UsageError(f"usage.{name} is {shown(value)}, beyond {shown(MAX_TOKEN_COUNT)} "
                         "tokens (more than any model's context)")
    return value


def reply_tokens(reply: Any, context: int | None = None) -> Tokens | None:
    """The reply's ``usage``, checked (:class:`UsageError`); None where it has none."""
    usage = reply.get("usage") if isinstance(reply, dict) else None
    if usage is None:
        return None
    if not isinstance(usage, dict):
        raise UsageError(f"usage is {type(usage).__name__}, not an object")
    details = usage.get("prompt_tokens_details")
    if details is not None and not isinstance(details, dict):
        raise UsageError("usage.prompt_tokens_details is not an object")
    return Tokens(_count(usage.get("prompt_tokens"), "prompt_tokens", context),
                  _count(usage.get("completion_tokens"), "completion_tokens", context),
                  _count((details or {}).get("cached_tokens"),
                         "prompt_tokens_details.cached_tokens", context))


def summed(parts: list[Tokens | None]) -> Tokens:
    """The tokens of several replies that made one answer (each was paid for); a count no reply
    reports stays None."""
    def add(values: list[int | None]) -> int | None:
        known = [v for v in values if v is not None]
        return sum(known) if known else None
    kept = [p for p in parts if p is not None]
    return Tokens(add([p.prompt for p in kept]), add([p.completion for p in kept]),
                  add([p.cached for p in kept]))


def with_tokens(response: R, tokens: Tokens | None) -> R:
    """``response`` with these counts (those it does not have already); a failure as it is."""
    if tokens is None or isinstance(response, Failed):
        return response
    return replace(
        response,
        n_prompt_tokens=response.n_prompt_tokens if response.n_prompt_tokens is not None
        else tokens.prompt,
        n_completion_tokens=tokens.completion, n_cached_tokens=tokens.cached)


def with_usage(response: R, reply: Any, context: int | None = None) -> R:
    """``response`` with the reply's token counts (those it does not have already), checked
    against ``context``; a failure as it is."""
    if isinstance(response, Failed):
        return response
    return with_tokens(response, reply_tokens(reply, context))
