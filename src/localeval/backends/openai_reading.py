"""What an OpenAI-compatible server's reply is read as: the answer of one request from its one
choice (:mod:`.replies` checks the shape), with its ``usage`` (:mod:`.usage`), every value
checked (:mod:`.reply_checks`) before it is scored; and what a whole run's failures say of the
server (one line, not one per request).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from ..errors import LocalevalError
from .async_http import Invalid, Malformed, Retry, public_url
from .base import (
    UNPROVEN,
    Failed,
    Generate,
    Generated,
    NextLogprobs,
    Request,
    Response,
    ScoreNext,
    TokenLogprobs,
)
from .echo_scoring import TOP_K
from .failures import BadReply, ErrorReply, ModelError, OverLimit, Unsupported
from .id_scoring import PADDED, padded_top
from .label_tokens import LabelTokenError
from .ranked_reading import first_ranked, ranked
from .replies import (
    Ambiguous,
    Top,
    generated_text,
    generated_tokens,
    logprob_of,
    only_choice,
    top_logprobs_each,
)
from .reply_checks import response_problem
from .usage import Tokens, UsageError, reply_tokens, with_tokens, with_usage

T = TypeVar("T")
NO_LOGPROBS = "the server returned no log-probs"


def read_choice(request: Request, choice: dict[str, Any], chat: bool, top_logprobs: int,
                server: str, names: dict[str, str] | None = None) -> Response:
    """The answer from the reply's one choice (:mod:`.replies` checks its shape); ``server``:
    its base URL, for the message when it sends no log-probs."""
    if isinstance(request, Generate):
        return Generated(text=generated_text(choice, chat))
    if not isinstance(request, ScoreNext):
        raise LocalevalError(f"the openai backend cannot run {type(request).__name__} "
                             "requests")
    each = _tops(choice, chat, request.positions or 1, server)
    top = each[0]
    # keyed by the candidate's full text (callers read by candidate), looked up by its name
    try:
        found = {c: logprob_of(top, (names or {}).get(c, c)) for c in request.candidates}
    except Ambiguous as e:  # the same reply again on a rerun
        return Failed(Unsupported(str(e)))
    if request.positions is not None:
        return first_ranked(request, each, names or {}, top_logprobs)
    if request.top is not None:
        return ranked(request, found, top, top_logprobs, names)
    if all(v is None for v in found.values()):
        return Failed(OverLimit(  # greedy: a rerun reads the same
            f"no candidate among the top {top_logprobs} next tokens "
            f"({', '.join(t.name for t in top[:5])}, …); raise --top-logprobs"))
    return NextLogprobs(logprobs=found, scoring=TOP_K)


def _tops(choice: dict[str, Any], chat: bool, positions: int, server: str) -> list[list[Top]]:
    """The top log-probs of each generated position read, or :class:`Retry` where there are
    none (a server under load may drop them once) or another client's by-id read padded
    them."""
    each = top_logprobs_each(choice, chat, positions)
    if each is None or each[0] is None:
        raise Retry(f"{NO_LOGPROBS}; does {public_url(server)} support logprobs? "
                    "use --method generation otherwise")
    if any(padded_top(t) for t in each):  # another client's by-id read beside it
        raise Retry(PADDED)
    return each


def counted(response: Response, reply: Any, context: int | None = None) -> Response:
    """The reply's ``usage`` token counts on the response (:mod:`.usage`), checked: a count
    beyond the model's ``context`` fails the request."""
    try:
        return with_usage(response, reply, context)
    except UsageError as e:
        raise Invalid(str(e)) from None


def valid(request: Request, response: Response) -> Response:
    """``response`` if every value read from the reply is valid (:mod:`.reply_checks`); else
    :class:`Invalid`, so the request fails for good with the reason instead of being scored."""
    problem = response_problem(request, response)
    if problem:
        raise Invalid(problem)
    return response


def keeping(parse: Callable[[Any], T], paid: dict[int, Tokens], i: int,
            context: int | None) -> Callable[[Any], T]:
    """``parse``, keeping the reply's usage in ``paid[i]`` (an invalid one is the parse's to
    refuse)."""
    def parse_and_keep(reply: Any) -> T:
        try:
            tokens = reply_tokens(reply, context)
        except UsageError:
            tokens = None
        if tokens is not None:
            paid[i] = tokens
        return parse(reply)
    return parse_and_keep


def noting_tokens(parse: Callable[[Any], T], greedy: dict[int, list[str] | None],
                  i: int) -> Callable[[Any], T]:
    """``parse``, keeping the reply's generated tokens in ``greedy[i]`` (a malformed reply is
    the parse's to refuse)."""
    def parse_and_note(reply: Any) -> T:
        try:
            greedy[i] = generated_tokens(only_choice(reply))
        except Malformed:
            greedy[i] = None
        return parse(reply)
    return parse_and_note


def sent(response: Response | None) -> Response:
    """A request's response once every call is back: one left without is a failure."""
    return response if response is not None else Failed(ModelError("no reply for this request"))


def top_k_kept(response: Response | None,
               named: dict[str, str] | LabelTokenError | None) -> Response:
    """What --scoring top-k makes of a request auto would echo: its top-k answer (an option
    outside the top k less likely than all of them), marked :data:`.UNPROVEN`; one sent
    straight to echo (its options cannot be named in the top k) fails with that reason."""
    if isinstance(response, NextLogprobs):
        return replace(response, scoring=UNPROVEN)
    if response is not None:
        return response
    if isinstance(named, LabelTokenError):
        return Failed(Unsupported(str(named)) if named.permanent else ErrorReply(str(named)))
    return Failed(ModelError("no reply for this request"))


def refused_alike(scores: Sequence[Response], server: str, model: str,
                  top_logprobs: int) -> None:
    """Every ScoreNext failing alike is one line about the server, not one per request."""
    failed = [r for r in scores if isinstance(r, Failed)]
    if not scores or len(failed) < len(scores):
        return
    if all(r.error.startswith(NO_LOGPROBS) for r in failed):
        raise LocalevalError(f"{public_url(server)} returns no log-probs for model "
                             f"{model!r}; use --method generation (or a server that "
                             "supports logprobs, e.g. vLLM with --max-logprobs)")
    cap = re.search(r"greater than max allowed: (\d+)", failed[0].error)
    if cap and all("max allowed" in r.error for r in failed):
        raise LocalevalError(
            f"{public_url(server)} gives at most {cap.group(1)} top log-probs, and "
            f"--top-logprobs is {top_logprobs}: lower it, or start vLLM with "
            f"--max-logprobs {top_logprobs} (its default is 20)")


def bad_reply(request: ScoreNext, response: Response) -> Response:
    """``response``, or a failed request where a value read from the replies is invalid."""
    problem = response_problem(request, response)
    if problem:
        return Failed(BadReply(f"invalid reply from the server: {problem}"))
    return response


def echoed_logprobs(reply: dict[str, Any], context: int | None = None) -> TokenLogprobs:
    """A completions reply with ``echo``: the prompt's token log-probs (the first is null, it
    has no context), then the one generated token's, which ``usage.prompt_tokens`` cuts off.
    The distribution's moments are not in the API: Min-K%++ is unavailable on this backend."""
    values = only_choice(reply)["logprobs"]["token_logprobs"]
    n_prompt = reply["usage"]["prompt_tokens"]  # none: a malformed reply, retried
    try:
        tokens = reply_tokens(reply, context)
    except UsageError as e:
        raise Invalid(str(e)) from None
    if isinstance(n_prompt, bool) or not isinstance(n_prompt, int) or n_prompt < 1:
        raise Invalid(f"usage.prompt_tokens is {n_prompt!r}, not a count of tokens")
    if not isinstance(values, list | None):
        raise Invalid(f"token_logprobs is {type(values).__name__}, not a list")
    if not values or len(values) < n_prompt:
        raise Retry(f"the server echoed {len(values or [])} log-probs for {n_prompt} prompt "
                    "tokens; does it support echo with logprobs on /v1/completions?")
    prompt = values[1:n_prompt]
    if any(v is None for v in prompt):
        raise Retry("the server echoed a null log-prob inside the prompt")
    # checked by valid()
    return with_tokens(TokenLogprobs(token_logprobs=prompt, n_prompt_tokens=n_prompt), tokens)
