"""Token counts a server reports (OpenAI-compatible ``usage``), read and checked where they
enter: ``prompt_tokens``, ``completion_tokens`` and the provider's own prompt cache,
``prompt_tokens_details.cached_tokens`` (OpenAI; vLLM reports it with
``--enable-prompt-tokens-details``). A server that sends no ``usage`` leaves them unknown
(None); a count that is not a non-negative integer is an invalid reply, never a number."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, TypeVar

from .base import Failed, Response

R = TypeVar("R", bound=Response)


class UsageError(ValueError):
    """A ``usage`` field that is not a count of tokens."""


def _count(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"usage.{name} is {value!r}, not a count of tokens")
    return value


def with_usage(response: R, reply: Any) -> R:
    """``response`` with the reply's token counts (those it does not have already); a failure
    as it is."""
    usage = reply.get("usage") if isinstance(reply, dict) else None
    if usage is None or isinstance(response, Failed):
        return response
    if not isinstance(usage, dict):
        raise UsageError(f"usage is {type(usage).__name__}, not an object")
    details = usage.get("prompt_tokens_details")
    if details is not None and not isinstance(details, dict):
        raise UsageError("usage.prompt_tokens_details is not an object")
    prompt = _count(usage.get("prompt_tokens"), "prompt_tokens")
    return replace(
        response,
        n_prompt_tokens=response.n_prompt_tokens if response.n_prompt_tokens is not None
        else prompt,
        n_completion_tokens=_count(usage.get("completion_tokens"), "completion_tokens"),
        n_cached_tokens=_count((details or {}).get("cached_tokens"),
                               "prompt_tokens_details.cached_tokens"))
