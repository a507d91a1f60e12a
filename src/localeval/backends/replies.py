"""The shape of an OpenAI-compatible reply, checked before any value of it is read: the one
``choices`` entry a one-prompt request gets (and its ``index``), the generated text (a string,
never a missing field or ``null`` read as ""), and the next token's top log-probs (each a
number, never ``null`` read as "outside the top-k"). Repeated names in a JSON object are refused
where the body is parsed (:func:`.async_http.load_json`).

A wrong shape raises :class:`.async_http.Malformed` naming the field (retried, then a failed
request with that reason); an invalid value raises :class:`.async_http.Invalid` (failed at once).

The chat API lists its top log-probs, and two tokens may decode to the same text (``▁A`` and
``A`` on a SentencePiece model): :func:`logprob_of` tells them apart by their ``bytes`` where the
server gives them, and otherwise says the candidate is ambiguous (:class:`Ambiguous`), so the
request fails with that reason instead of the last entry winning.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, cast

from .async_http import Invalid, Malformed
from .reply_checks import logprob_problem


class Top(NamedTuple):
    """One of the next token's top log-probs: the server's name for the token, its log-prob,
    and its UTF-8 bytes where the server gives them (the chat API)."""

    name: str
    logprob: float
    utf8: tuple[int, ...] | None = None


class Ambiguous(Exception):
    """Two of the top log-probs carry the candidate's name and nothing tells them apart."""


def only_choice(reply: Any) -> dict[str, Any]:
    """The one ``choices`` entry of a reply to one prompt (its ``index`` 0 where given)."""
    if not isinstance(reply, dict):
        raise Malformed(f"the reply is a JSON {type(reply).__name__}, not an object")
    choices = reply.get("choices")
    if not isinstance(choices, list):
        raise Malformed(f"choices is {_kind(choices)}, not a list")
    if len(choices) != 1:
        raise Malformed(f"choices has {len(choices)} entries for one prompt")
    choice = choices[0]
    if not isinstance(choice, dict):
        raise Malformed(f"choices[0] is {_kind(choice)}, not an object")
    index = choice.get("index", 0)
    if isinstance(index, bool) or index != 0:
        raise Malformed(f"choices[0].index is {index!r} for the only prompt (index 0)")
    return choice


def generated_text(choice: dict[str, Any], chat: bool) -> str:
    """The text of a completions choice (``text``) or a chat one (``message.content``)."""
    if not chat:
        return _text(choice, "text", "choices[0]")
    message = choice.get("message")
    if not isinstance(message, dict):
        what = _kind(message) if "message" in choice else "missing"
        raise Malformed(f"choices[0].message is {what}, not an object")
    refusal = message.get("refusal")
    if message.get("content") is None and isinstance(refusal, str):
        raise Malformed(f"choices[0].message.content is null; the server refused: {refusal!r}")
    return _text(message, "content", "choices[0].message")


def top_logprobs(choice: dict[str, Any], chat: bool) -> list[Top] | None:
    """The first generated position's top log-probs in the server's order; None where the
    reply has none (a server may drop them under load: asked again)."""
    each = top_logprobs_each(choice, chat, 1)
    return None if each is None else each[0]


def top_logprobs_each(choice: dict[str, Any], chat: bool, most: int) -> list[list[Top]] | None:
    """The top log-probs of each of the first ``most`` generated positions, in order; None
    where the reply has none."""
    lp = choice.get("logprobs")
    if lp is None:
        return None
    if not isinstance(lp, dict):
        raise Malformed(f"choices[0].logprobs is {_kind(lp)}, not an object")
    return _chat_top(lp, most) if chat else _completions_top(lp, most)


def generated_tokens(choice: dict[str, Any]) -> list[str] | None:
    """The tokens a reply generated, as the server names them (a chat reply's
    ``logprobs.content[].token``, a completions one's ``logprobs.tokens``); None where it names
    none. A second read is compared with the first by them (:mod:`.ranked_reading`)."""
    lp = choice.get("logprobs")
    if not isinstance(lp, dict):
        return None
    content = lp.get("content")
    tokens: Any = [p.get("token") if isinstance(p, dict) else None for p in content] \
        if isinstance(content, list) else lp.get("tokens")
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        return None
    return tokens


def logprob_of(top: list[Top], name: str) -> float | None:
    """The log-prob of the token ``name`` among ``top`` (None: not among them); two entries of
    that name are told apart by their bytes, else :class:`Ambiguous`."""
    i = place_of(top, name)
    return None if i is None else top[i].logprob


def place_of(top: list[Top], name: str) -> int | None:
    """The index of the token ``name`` in ``top`` as the server listed them (None: not among
    them); two entries of that name are told apart by their bytes, else :class:`Ambiguous`."""
    same = [i for i, t in enumerate(top) if t.name == name]
    if len(same) > 1 and all(top[i].utf8 is not None for i in same):
        # the one whose bytes are the name's; none of them (a token id's name): still two
        same = [i for i in same if top[i].utf8 == tuple(name.encode())] or same
    if len(same) > 1:
        values = ", ".join(f"{top[i].logprob:g}" for i in same)
        why = "the same bytes" if top[same[0]].utf8 is not None else "no bytes given"
        raise Ambiguous(f"the server's top log-probs name {len(same)} tokens {name!r} "
                        f"({values}, {why}): which one is the candidate is ambiguous")
    return same[0] if same else None


def _completions_top(lp: dict[str, Any], most: int) -> list[list[Top]] | None:
    tops = lp.get("top_logprobs")
    if not tops:  # missing, null or []
        return None
    if not isinstance(tops, list):
        raise Malformed("choices[0].logprobs.top_logprobs is not a list of objects")
    out = []
    for p, top in enumerate(tops[:most]):
        if not isinstance(top, dict):
            raise Malformed(f"choices[0].logprobs.top_logprobs[{p}] is not an object")
        out.append([Top(name, _logprob(name, value)) for name, value in top.items()])
    return out


def _chat_top(lp: dict[str, Any], most: int) -> list[list[Top]] | None:
    content = lp.get("content")
    if not content:
        return None
    if not isinstance(content, list):
        raise Malformed("choices[0].logprobs.content is not a list of objects")
    return [_chat_position(position, p) for p, position in enumerate(content[:most])]


def _chat_position(position: Any, p: int) -> list[Top]:
    if not isinstance(position, dict):
        raise Malformed(f"choices[0].logprobs.content[{p}] is not an object")
    entries = position.get("top_logprobs")
    if not isinstance(entries, list):
        raise Malformed(f"choices[0].logprobs.content[{p}].top_logprobs is {_kind(entries)}, "
                        "not a list")
    out = []
    for k, entry in enumerate(entries):
        where = f"choices[0].logprobs.content[{p}].top_logprobs[{k}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("token"), str):
            raise Malformed(f"{where} is not an object with a token text")
        utf8 = entry.get("bytes")
        if utf8 is not None and not (isinstance(utf8, list) and all(
                isinstance(b, int) and not isinstance(b, bool) and 0 <= b < 256 for b in utf8)):
            raise Malformed(f"{where}.bytes is not a list of bytes")
        out.append(Top(entry["token"], _logprob(entry["token"], entry.get("logprob")),
                       None if utf8 is None else tuple(utf8)))
    return out


def _logprob(name: str, value: Any) -> float:
    """A top log-prob's value: a number, not NaN and not above 0 (-inf may be honest for a
    token the model rules out; a candidate's is refused later, by :mod:`.reply_checks`)."""
    if value is None:
        raise Invalid(f"the log-prob of {name!r} is null")
    problem = logprob_problem(value)
    if problem and value != -math.inf:
        raise Invalid(f"the log-prob of {name!r}: {problem}")
    return cast(float, value)  # a number (checked above): an int stays one, as it came


def _text(parent: dict[str, Any], key: str, where: str) -> str:
    value = parent.get(key)
    if not isinstance(value, str):
        what = _kind(value) if key in parent else "missing"
        raise Malformed(f"{where}.{key} is {what}, not text")
    return value


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__
