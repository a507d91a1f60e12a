"""Is a response a valid answer to its request? Every value a backend hands back (a server's
reply above all) is checked here before it is used or cached: a log-prob is a finite number
(not a bool, not a string) and not above 0, a candidate's log-prob is there for each candidate,
token log-probs are a list of them, an embedding is a non-empty list of finite numbers, a
generated text is text. :func:`response_problem` says what is wrong, or None;
:func:`checked` turns an invalid response into a failed one (permanent: the same reply is read
the same way again), so it is counted as a failure and never scored or cached.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .base import (
    Answered,
    Embedding,
    Failed,
    Generated,
    Moderation,
    NextLogprobs,
    Request,
    Response,
    ScoreNext,
    TokenLogprobs,
    answer_type,
)
from .failures import BadReply
from .usage import MAX_TOKEN_COUNT, shown

# A log-prob is log p <= 0; a backend that sums in low precision may land a hair above 0 for a
# token of probability 1, which is rounding, not a wrong number.
LOGPROB_SLACK = 1e-4


def number_problem(value: Any, *, at_most: float | None = None,
                   at_least: float | None = None) -> str | None:
    """Why ``value`` is not a finite real number within the bounds (None: it is)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{value!r} is not a number"
    if not math.isfinite(value):
        return f"{value!r} is not finite"
    if at_most is not None and value > at_most:
        return f"{value!r} is above {at_most:g}"
    if at_least is not None and value < at_least:
        return f"{value!r} is below {at_least:g}"
    return None


def logprob_problem(value: Any) -> str | None:
    """Why ``value`` is not a log-prob (a finite number <= 0), or None."""
    problem = number_problem(value)
    if problem is None and value > LOGPROB_SLACK:
        return f"{value!r} is positive (a log-prob is at most 0)"
    return problem


def _list_problem(name: str, values: Any, check: Callable[[Any], str | None],
                  length: int | None = None) -> str | None:
    if not isinstance(values, list):
        return f"{name} is {type(values).__name__}, not a list"
    if length is not None and len(values) != length:
        return f"{name} has {len(values)} values for {length} tokens"
    for k, v in enumerate(values):
        problem = check(v)
        if problem:
            return f"{name}[{k}]: {problem}"
    return None


def _score_problem(request: ScoreNext, response: NextLogprobs) -> str | None:
    found = response.logprobs
    if not isinstance(found, dict):
        return "no log-probs for the candidates"
    if set(found) != set(request.candidates):
        return f"log-probs for {sorted(found)!r}, not for the candidates {list(request.candidates)!r}"
    for candidate, value in found.items():
        problem = None if value is None else logprob_problem(value)  # None: outside the top-k
        if problem:
            return f"the log-prob of {candidate!r}: {problem}"
    return None if request.top is None else _rank_problem(request, request.top, response.ranks)


def _rank_problem(request: ScoreNext, top: int, ranks: Any) -> str | None:
    """Each candidate's rank: an integer from 1 to ``top``, or None beyond it."""
    if not isinstance(ranks, dict) or set(ranks) != set(request.candidates):
        return f"no rank for each candidate among the top {top}"
    for candidate, rank in ranks.items():
        if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int)
                                 or not 1 <= rank <= top):
            return f"the rank of {candidate!r} is {rank!r}, not 1 to {top} or null"
    return None


def _text_logprobs_problem(response: TokenLogprobs) -> str | None:
    values = response.token_logprobs
    problem = _list_problem("token log-probs", values, logprob_problem)
    if problem:
        return problem
    for name, more, check in (
            ("token means", response.token_means, logprob_problem),
            ("token stds", response.token_stds, lambda v: number_problem(v, at_least=0))):
        if more is not None:
            problem = _list_problem(name, more, check, len(values))
            if problem:
                return problem
    n = response.n_prompt_tokens
    if n is not None and (not isinstance(n, int) or number_problem(n, at_least=0)):
        return f"the prompt's token count {n!r} is not a count"
    return None


def _token_counts_problem(response: Answered) -> str | None:
    """Generated and provider-cached token counts (the prompt's is checked per kind), and no
    count beyond any model's context (:data:`.usage.MAX_TOKEN_COUNT`: an answer cached with
    10**400 tokens is recomputed, never priced)."""
    for name in ("n_completion_tokens", "n_cached_tokens"):
        n = getattr(response, name)
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
            return f"the token count {name} {n!r} is not a count"
    for name in ("n_prompt_tokens", "n_completion_tokens", "n_cached_tokens"):
        n = getattr(response, name)
        if isinstance(n, int | float) and n > MAX_TOKEN_COUNT:
            return f"the token count {name} {shown(n) if isinstance(n, int) else repr(n)} is beyond {shown(MAX_TOKEN_COUNT)}"
    return None


def response_problem(request: Request, response: Response) -> str | None:
    """Why ``response`` is not a valid answer to ``request`` (None: it is). A failed response
    is a failure already, not checked."""
    if isinstance(response, Failed):
        return None
    if not isinstance(response, answer_type(request)):
        return f"a {type(response).__name__} answer to a {type(request).__name__} request"
    problem = _token_counts_problem(response)
    if problem:
        return problem
    if isinstance(request, ScoreNext) and isinstance(response, NextLogprobs):
        return _score_problem(request, response)
    if isinstance(response, TokenLogprobs):
        return _text_logprobs_problem(response)
    if isinstance(response, Generated):
        return None if isinstance(response.text, str) else "no generated text"
    if isinstance(response, Embedding):
        vector = response.embedding
        if isinstance(vector, list) and not vector:
            return "an empty embedding"
        return _list_problem("the embedding", vector, number_problem)
    if isinstance(response, Moderation):
        return None if isinstance(response.raw, dict) else "the reply is not a JSON object"
    return None


def checked(request: Request, response: Response, source: str = "the backend") -> Response:
    """``response``, or a permanent failure saying why it is not a valid answer."""
    problem = response_problem(request, response)
    if problem is None:
        return response
    return Failed(BadReply(f"invalid reply from {source}: {problem}"))
