"""A guard's labels read from a server's top log-probs by rank (IRIS ``guard_models/base.py``
``GuardLLM.complete`` keeps the labels among the top k), at one position or at the first of
the generated positions whose top k holds one (``ScoreNext.positions``).

Finding that position needs only the top k of each position, so that is what the server is
asked for there: asking every position for --top-logprobs (up to the vocabulary, 49,152 on
the tests' model, for ``label_scores=full``) made a reply of 100 positions × 49,152 entries a
sample, and a vLLM CPU server stopped answering under it (stop 56's CI). Under
``whole_vocabulary`` (``label_scores=full``) the position found is then read again alone: a
second request generates up to it with --top-logprobs, and must find the same position (the
same greedy tokens), or the sample fails with the reason. ``vllm:`` asks the same question
(:func:`lacks_a_value`) of its own first pass, and reads such a label by id.
"""

from __future__ import annotations

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
    them: the first position's, every rank None and ``position`` None."""
    first: NextLogprobs | Failed | None = None
    passed = 0  # labelled positions passed (``request.labelled``: IRIS PolyGuard's pred_labels[2])
    for p, top in enumerate(each):
        try:
            found = {c: logprob_of(top, names.get(c, c)) for c in request.candidates}
        except Ambiguous as e:
            return Failed(Unsupported(f"generated position {p}: {e}"))
        read = ranked(request, found, top, asked, names)
        if isinstance(read, Failed):
            return read
        if any(r is not None for r in (read.ranks or {}).values()):
            if passed == request.labelled:
                return replace(read, position=p)
            passed += 1
            read = replace(read, ranks=dict.fromkeys(read.ranks or {}))
        first = first or read
    return first or Failed(OverLimit("the server generated no position to read"))


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


def same_position(first: NextLogprobs, again: Response) -> str | None:
    """Why the second read cannot stand for the first (its greedy tokens led elsewhere), or
    None."""
    if isinstance(again, NextLogprobs) and again.position != first.position:
        return (f"the server's greedy tokens changed between two requests: the first label "
                f"came at generated position {first.position}, then at {again.position}")
    return None
