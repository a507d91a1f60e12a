"""A guard's labels read from a server's top log-probs by rank (IRIS ``guard_models/base.py``
``GuardLLM.complete`` keeps the labels among the top k), at one position or at the first of
the generated positions whose top k holds one (``ScoreNext.positions``).

Finding that position needs only the top k of each position, so that is what the server is
asked for there: asking every position for --top-logprobs (up to the vocabulary, 49,152 on
the tests' model, for ``label_scores=full``) made a reply of 100 positions × 49,152 entries a
sample, and a vLLM CPU server stopped answering under it (stop 56's CI). Under
``whole_vocabulary`` (``label_scores=full``) the position found is then read again alone: a
second request generates up to it with --top-logprobs, and must be the same reading (the same
greedy tokens up to it, the first label's value within 1e-3: :func:`same_reading`), or the
sample fails with the reason. ``vllm:`` asks the same question
(:func:`lacks_a_value`) of its own first pass, reads such a label by id, and checks that
second pass with :func:`same_reading` too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from .base import Failed, NextLogprobs, Response, ScoreNext
from .failures import OverLimit, Unsupported
from .replies import Ambiguous, Top, logprob_of, place_of


def ranked(request: ScoreNext, found: dict[str, float | None], top: list[Top],
           asked: int, names: dict[str, str] | None = None) -> NextLogprobs | Failed:
    """The candidates' log-probs with their ranks among the server's top log-probs, None beyond
    ``request.top``; a candidate absent from the list is outside the top k only when the list
    holds k tokens at least.

    A rank is the candidate's place in the list sorted by value, tokens of equal value kept in
    the server's order (the completions API keys them in a dict, whose order is the reply's).
    That is the order IRIS reads: ``guard_models/base.py:38`` ``GuardLLM.complete`` keeps
    ``output[:len(valid_tokens)]`` of the list as it came, so a label tied with the k-th token
    but after it is out, and ``get_llm_safe_response_eval_result.py:22-29`` ``get_pred_label``
    keeps the first of tied labels in that order (issue 64 item 1; ``guards/staged.py``
    ``argmax_label`` reads the ranks so)."""
    k = request.top or 0
    if len(top) < k:
        return Failed(OverLimit(f"the server returned {len(top)} top log-probs, fewer than "
                                f"the {k} the guard reads (--top-logprobs is {asked})"))
    ranks: dict[str, int | None] = {}
    for c, v in found.items():
        if v is None:
            ranks[c] = None
            continue
        place = place_of(top, (names or {}).get(c, c))
        ties_before = 0 if place is None else sum(1 for t in top[:place] if t.logprob == v)
        ranks[c] = 1 + sum(1 for t in top if t.logprob > v) + ties_before
    ranks = {c: r if r is not None and r <= k else None for c, r in ranks.items()}
    return NextLogprobs(logprobs=found, ranks=ranks)


def first_ranked(request: ScoreNext, each: list[list[Top]], names: dict[str, str],
                 asked: int) -> NextLogprobs | Failed:
    """The first generated position whose top ``request.top`` holds a candidate, read as
    :func:`ranked` reads one (IRIS ``guard_models/base.py`` ``GuardLLM.complete``); none of
    them: the first position's, every rank None and ``position`` None. ``request.labelled``
    passes that many labelled positions first (-1: the last of them); ``request.at`` reads the
    position of that index, labelled or not."""
    if request.at is not None:
        return _read_at(request, each, names, asked, request.at)
    first: NextLogprobs | None = None
    last: NextLogprobs | None = None  # the last labelled one (``labelled`` -1)
    passed = 0  # labelled positions passed (``request.labelled``: IRIS PolyGuard's pred_labels[2])
    for p, top in enumerate(each):
        read = _read_position(request, top, p, names, asked)
        if isinstance(read, Failed):
            return read
        if any(r is not None for r in (read.ranks or {}).values()):
            if request.labelled == -1:
                last = replace(read, position=p)
            elif passed == request.labelled:
                return replace(read, position=p)
            passed += 1
            read = replace(read, ranks=dict.fromkeys(read.ranks or {}))
        first = first or read
    if last is not None:
        return last
    return first or Failed(OverLimit("the server generated no position to read"))


def _read_at(request: ScoreNext, each: list[list[Top]], names: dict[str, str], asked: int,
             at: int) -> NextLogprobs | Failed:
    """Position ``at`` alone, labelled or not (Parallax-AI PolyGuard's logprobs[5]); fewer
    positions generated: none read, every rank None."""
    if not 0 <= at < len(each):
        return NextLogprobs(logprobs={}, ranks=dict.fromkeys(request.candidates))
    read = _read_position(request, each[at], at, names, asked)
    return read if isinstance(read, Failed) else replace(read, position=at)


def _read_position(request: ScoreNext, top: list[Top], p: int, names: dict[str, str],
                   asked: int) -> NextLogprobs | Failed:
    """Generated position ``p`` (its top log-probs ``top``) read as :func:`ranked` reads one."""
    try:
        found = {c: logprob_of(top, names.get(c, c)) for c in request.candidates}
    except Ambiguous as e:
        return Failed(Unsupported(f"generated position {p}: {e}"))
    return ranked(request, found, top, asked, names)


def asked_per_position(request: ScoreNext, top_logprobs: int) -> int:
    """How many top log-probs the first request asks of each position: the k that finds the
    labelled position when several are generated (never more than --top-logprobs, which then
    fails as too few in :func:`ranked`), else --top-logprobs."""
    if request.positions is not None and request.top is not None:
        return min(request.top, top_logprobs)
    return top_logprobs


def lacks_a_value(request: ScoreNext, response: Response) -> bool:
    """Whether a whole-vocabulary request's first labelled position was found without every
    label's value (one outside the top log-probs read there): that position must be read
    again, with every label's log-prob."""
    return request.whole_vocabulary and isinstance(response, NextLogprobs) \
        and response.position is not None \
        and any(v is None for v in response.logprobs.values())


def needs_whole_read(request: ScoreNext, response: Response, top_logprobs: int) -> bool:
    """On a server: :func:`lacks_a_value`, and --top-logprobs asks for more than the k read
    at each position (else a second read could give nothing more)."""
    return lacks_a_value(request, response) \
        and top_logprobs > asked_per_position(request, top_logprobs)


# How far the first label's log-prob may lie between the two reads: the README's allowance for
# float order between two computations of one distribution.
READ_TOLERANCE = 1e-3


def same_reading(first: NextLogprobs, before: Sequence[object] | None, again: Response,
                 again_before: Sequence[object] | None,
                 changed: str = "the server's greedy tokens changed between two requests"
                 ) -> str | None:
    """Why the second read cannot stand for the first, or None. Finding a label at the same
    position is not enough: a server that is not batch-invariant may write other greedy tokens
    the second time and put the labels there with other values. So the greedy tokens before the
    position (``before``, ``again_before``: each read's generated tokens, by name or id) must be
    the same token by token, and each label the first read found a value for must have it
    again, within :data:`READ_TOLERANCE`."""
    if not isinstance(again, NextLogprobs):
        return None
    p = first.position
    if again.position != p:
        return (f"{changed}: the first label came at generated position {p}, then at "
                f"{again.position}")
    if p is None:
        return None
    if before is None or again_before is None or len(before) < p or len(again_before) < p:
        return (f"{changed}? the reply named fewer than the {p} generated tokens before the "
                "label, so the two reads cannot be compared")
    for k, (a, b) in enumerate(zip(before[:p], again_before[:p], strict=True)):
        if a != b:
            return f"{changed}: generated token {k} was {a!r}, then {b!r}"
    for c, v in first.logprobs.items():
        w = again.logprobs.get(c)
        if v is not None and (w is None or abs(w - v) > READ_TOLERANCE):
            shown = "none" if w is None else f"{w:.4f}"
            return (f"{changed}: the log-prob of {c!r} at generated position {p} was "
                    f"{v:.4f}, then {shown}")
    return None
