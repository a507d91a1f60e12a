"""Exact likelihood on any completions server: a multiple-choice ``ScoreNext`` read from the
echoed log-probs of prompt + option, whatever top-k the server caps.

lm-evaluation-harness's ``local-completions`` way (EleutherAI/lm-evaluation-harness
``lm_eval/models/openai_completions.py``: ``LocalCompletionsAPI._create_payload`` with
``generate=False`` posts the context + continuation to ``/v1/completions`` with ``echo``,
``logprobs`` 1, ``max_tokens`` 1, temperature 0; ``parse_logprobs`` reads
``token_logprobs[ctxlen:-1]``, the last entry being the one generated token). lm-eval counts
``ctxlen`` with its own tokenizer (``api_models.py`` ``TemplateAPI.batch_loglikelihood_requests``);
a server has none we can trust to match, so the server counts it: the context alone is echoed
too, and each option's reply must start with exactly those tokens.

What is read is the log-prob of the option's **first token** at the position after the
context: the rule of ``hf:`` (:func:`.prompt_tokens.score_tokens`: trailing spaces move from
the context to the option) and of the top-k mode, so one run never mixes rules. Per question,
1 + #options requests; ``max_tokens`` 1 because llama-cpp-python takes 0 or less as "up to the
context" (and it needs ``--logits_all`` for echo at all). An option whose first token merges
with the context's last one (the option's reply does not start with the context's tokens), two
options sharing a first token, and a chat prompt (``/chat/completions`` has no echo) fail alone,
with the reason.

The cheapest exact form (issue 53 item 2), on vLLM (its ``/tokenize`` answers with ids: label
tokens ``server token ids``, :mod:`.label_tokens`) and without ``--batch``: one ``/completions``
request per question, not 1 + #options. The context's tokens come from ``/tokenize`` (no forward
pass on the server: the context-alone echo costs as much as an option's), compared as ids with
the options' echoed ``token_id:<id>`` tokens, so the merge check above stays; the options go in
one ``/completions`` request whose ``prompt`` is their list (vLLM answers one choice per prompt,
by ``index``), with ``logprobs`` 0 (each echoed token's own log-prob, no top-1 beside it: fewer
bytes). An ``index`` may be wrong (issue 63 item 2: options swapped were read as given), so each
option's whole prompt is tokenized too (#options more ``/tokenize`` calls, no forward pass) and
its echo must be exactly those tokens. Any
other server, and ``--batch``, keep one prompt a request, the context echoed too. vLLM computes
every prompt's log-probs in full (it reads no prefix cache for a request with prompt log-probs),
so the server's work per question is #options prompts either way: lm-eval's.

Modes (``--scoring``): ``top-k`` (the next token's top log-probs only), ``echo``, and ``auto``
(the default): top-k, and in echo any request whose reply lacks an option or whose top-k the
server refuses (vLLM: "greater than max allowed"). Only requests marked ``ScoreNext.echo`` (the
multiple-choice task's) are ever echoed: guards keep their authors' top-k rule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .async_http import Invalid, Malformed, Retry
from .base import Failed, NextLogprobs, Request, Response, ScoreNext
from .config import SCORING
from .failures import BadReply, Unsupported
from .label_tokens import LLAMA_CPP
from .replies import only_choice
from .usage import Tokens, UsageError, reply_tokens, summed, with_tokens

AUTO, TOP_K, ECHO, IDS = SCORING
REFUSED = "greater than max allowed"  # vLLM's words for a top-k over its --max-logprobs
NO_CANDIDATE = "no candidate among the top"
# what multiple choice does instead of echo on such a server
USE_TOP_K = "use --scoring top-k with a --top-logprobs that holds the options"
MISALIGNED = ("llama-cpp-python's echo misaligns prompt log-probs for a model without a BOS token "
              "(llama_cpp/llama.py Llama._create_completion reads each token's log-prob from the "
              f"distribution after it): {USE_TOP_K}")
CHAT = ("echo scoring needs a plain-text prompt (chat prompts go to /chat/completions, which "
        "has no echo); use --scoring top-k or drop --chat")


def needs_echo(request: Request, response: Response, mode: str) -> bool:
    """Whether ``auto`` redoes this top-k reply in echo: a multiple-choice request on a plain
    prompt whose reply lacks an option, or whose top-k the server refused."""
    if mode != AUTO or not isinstance(request, ScoreNext) or not request.echo \
            or not isinstance(request.prompt, str):
        return False
    if isinstance(response, Failed):
        return NO_CANDIDATE in response.error or REFUSED in response.error
    return isinstance(response, NextLogprobs) and \
        any(v is None for v in response.logprobs.values())


def echo_texts(request: ScoreNext) -> list[str] | str:
    """The texts echoed for one request: the context alone (trailing spaces and tabs moved to
    the options, as ``hf:`` splits them), then context + each option; or why it cannot be."""
    if not isinstance(request.prompt, str):
        return CHAT
    stripped = request.prompt.rstrip(" \t")
    return [stripped] + [request.prompt + c for c in request.candidates]


def echo_body(model: str, text: str | list[str], add_special_tokens: bool,
              token_ids: bool, top: int = 1) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "prompt": text, "temperature": 0.0, "max_tokens": 1,
            "echo": True, "logprobs": top}
    if not add_special_tokens:
        body["add_special_tokens"] = False  # vLLM's extra parameter: no BOS
    if token_ids:
        body["return_tokens_as_token_ids"] = True  # vLLM: echoed tokens compared by id
    return body


@dataclass(frozen=True)
class Echoed:
    """One echo reply: the prompt's tokens as the server split them, and their log-probs (the
    first may be null: nothing precedes it); the reply's usage (each echo is paid for)."""

    tokens: list[str]
    logprobs: list[float | None]
    usage: Tokens | None = None


def echoed(reply: dict[str, Any], context: int | None = None) -> Echoed:
    """One echo reply's prompt tokens and their log-probs, its usage checked against the
    model's ``context`` (:mod:`.usage`); malformed is :class:`Invalid`."""
    echo = _echoed_tokens(only_choice(reply))
    try:
        usage = reply_tokens(reply, context)
    except UsageError as e:
        raise Invalid(str(e)) from None
    n_prompt = usage.prompt if usage else None
    if echo is None:
        raise Retry("the server echoed no tokens with log-probs; does it support echo with "
                    "logprobs on /v1/completions? (llama.cpp: start it with --logits_all)")
    tokens, values = echo
    if isinstance(n_prompt, bool) or not isinstance(n_prompt, int) or n_prompt < 1:
        raise Invalid(f"usage.prompt_tokens is {n_prompt!r}, not a count of tokens")
    if len(tokens) < n_prompt - 1:  # a server that ignores echo: its next token alone
        raise Retry(f"the server echoed {len(tokens)} tokens for a prompt of {n_prompt}; does "
                    "it support echo with logprobs on /v1/completions?")
    # vLLM echoes the prompt then the generated token; llama-cpp-python 0.3 the prompt alone,
    # less a BOS it drops (usage still counts it): the prompt's part is the shorter
    n = min(len(tokens), n_prompt)
    return Echoed(tokens[:n], values[:n], usage)


def _echoed_tokens(choice: dict[str, Any]) -> tuple[list[str], list[Any]] | None:
    """A choice's echoed tokens and their log-probs (``logprobs.tokens``,
    ``logprobs.token_logprobs``, one per token), or None where it has no such pair."""
    lp = choice.get("logprobs") or {}
    tokens = lp.get("tokens") if isinstance(lp, dict) else None
    values = lp.get("token_logprobs") if isinstance(lp, dict) else None
    if not isinstance(tokens, list) or not isinstance(values, list) \
            or len(tokens) != len(values) or not all(isinstance(t, str) for t in tokens):
        return None
    return tokens, values


def combine(request: ScoreNext, parts: list[Echoed | list[Echoed] | Failed],
            paid: Tokens | None = None) -> NextLogprobs | Failed:
    """The request's response from its echo replies (context first, then each option; a list
    reply's several in order), with their tokens summed, and ``paid``'s: the top-k reply
    ``auto`` redid, if any. The list form (:func:`echo_posts`) has each option's prompt
    tokenized between the context and the echoes: each echo must be its own prompt's tokens
    (never another option's: a list reply's choices carry an ``index`` that may be wrong), and
    whether an option merges with the context is read from those tokens."""
    failed = next((p for p in parts if isinstance(p, Failed)), None)
    if failed is not None:
        return failed
    echoes = [e for p in parts for e in (p if isinstance(p, list) else [p])
              if isinstance(e, Echoed)]
    context = echoes[0].tokens
    k = len(request.candidates)
    if len(echoes) == 1 + 2 * k:  # the list form: context, each option's own tokens, echoes
        own, echoes = echoes[1:1 + k], echoes[:1] + echoes[1 + k:]
        wrong = _not_own(request.candidates, [e.tokens for e in own],
                         [e.tokens for e in echoes[1:]])
        if wrong:
            return wrong
    found = _after_context(request, context, echoes[1:])
    if isinstance(found, Failed):
        return found
    return with_tokens(NextLogprobs(logprobs=found, scoring=ECHO),
                       summed([paid, *(p.usage for p in echoes)]))


def _after_context(request: ScoreNext, context: list[str],
                   echoes: list[Echoed]) -> dict[str, float | None] | Failed:
    """Each option's log-prob at the first position after ``context`` in its echo, or why it
    cannot be read there (an option merging with the context, a null, a shared first
    token)."""
    n = len(context)
    found: dict[str, float | None] = {}
    firsts = []
    for c, part in zip(request.candidates, echoes, strict=True):
        tokens, values = part.tokens, part.logprobs
        if n < 1 or len(tokens) <= n or tokens[:n] != context:
            return Failed(Unsupported(f"option {c!r} merges with the prompt's last token on "
                                      "the server's tokenizer: echo cannot read it after the "
                                      "prompt; use --scoring top-k"))
        if values[n] is None:  # a null is "outside the top-k" to the checks: never here
            return Failed(BadReply(f"invalid reply from the server: a null log-prob echoed "
                                   f"for option {c!r}"))
        firsts.append(tokens[n])
        found[c] = values[n]
    if len(set(firsts)) < len(firsts):
        return Failed(Unsupported(f"candidates {request.candidates} share a first token; "
                                  "ScoreNext reads one position"))
    return found


def _not_own(candidates: tuple[str, ...], own: list[list[str]],
             echoed: list[list[str]]) -> Failed | None:
    """Why the list echo cannot be read: an option's echo that is not its own prompt's tokens
    (``own``: /tokenize's, in context), named for what it is — another option's echo (the
    choices' ``index`` swapped), a BOS that /tokenize gives and the echo drops, or a /tokenize
    that disagrees with the echo otherwise; None where each is its own."""
    for c, mine, got in zip(candidates, own, echoed, strict=True):
        if got == mine:
            continue
        other = next((o for o, theirs in zip(candidates, own, strict=True)
                      if o != c and theirs == got), None)
        if other is not None:
            return Failed(BadReply(f"invalid reply from the server: its list echo gave the "
                                   f"echo of option {other!r}'s prompt as option {c!r}'s (the "
                                   "choices' index does not match the prompts' order)"))
        why = "; the first is missing: a BOS the echo drops" if got == mine[1:] else ""
        return Failed(Unsupported(
            f"the server's echo of option {c!r}'s prompt ({len(got)} tokens) is not the tokens "
            f"the server's /tokenize gives for it ({len(mine)}{why}): echo cannot be read "
            "against the prompt; use --scoring top-k"))
    return None


TOKENIZE = "/tokenize"  # vLLM's, at the server's root (not under /v1)


@dataclass(frozen=True)
class EchoPost:
    """One request of a question's echo: ``path`` (``/completions`` under the base URL, or
    :data:`TOKENIZE` at the server's root), its body, and how its reply (and the model's
    context) becomes its parts, in :func:`combine`'s order."""

    path: str
    body: dict[str, Any]
    parse: Callable[[Any, int | None], list[Echoed]]

    def reader(self, context: int | None) -> Callable[[Any], list[Echoed]]:
        """The reply's parser, its usage checked against the model's ``context``."""
        return lambda reply: self.parse(reply, context)


def _one(reply: Any, context: int | None) -> list[Echoed]:
    return [echoed(reply, context)]


def echo_posts(model: str, texts: list[str], add_special_tokens: bool, token_ids: bool,
               lists: bool) -> list[EchoPost]:
    """The requests for one question's ``texts`` (:func:`echo_texts`): one prompt a request;
    or, on vLLM (``token_ids``: its /tokenize answers) where ``lists`` (not --batch, whose
    requests keep one prompt each), the context tokenized and the options echoed as one list
    of prompts (module docstring)."""
    if not (token_ids and lists):
        return [EchoPost("/completions", echo_body(model, t, add_special_tokens, token_ids), _one)
                for t in texts]
    options = texts[1:]
    # the context, then each option's whole prompt, tokenized: a list reply's choices may
    # carry each other's index, so each echo is checked against its own prompt's tokens
    # (:func:`combine`), tokenized in context (a SentencePiece tokenizer may split an option
    # alone otherwise than after the context)
    return [*(EchoPost(TOKENIZE, {"model": model, "prompt": text,
                                  "add_special_tokens": bool(add_special_tokens)},
                       lambda reply, _context: [tokenized(reply)]) for text in texts),
            # logprobs 0: vLLM still echoes each token's log-prob (measured on vLLM 0.32 CPU:
            # the same tokens and token_logprobs as with 1), without a top-1 beside each
            # (40% fewer bytes)
            EchoPost("/completions", echo_body(model, options, add_special_tokens, True, 0),
                     lambda reply, context: echoed_each(reply, context, len(options)))]


def tokenized(reply: Any) -> Echoed:
    """The context's tokens from vLLM's ``/tokenize`` reply, named as echo names them with
    ``return_tokens_as_token_ids`` (``token_id:<id>``); no log-probs (none are read)."""
    ids = reply.get("tokens") if isinstance(reply, dict) else None
    if not isinstance(ids, list) or \
            not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
        raise Malformed(f"/tokenize's tokens is {type(ids).__name__}, not a list of token ids")
    return Echoed([f"token_id:{i}" for i in ids], [None] * len(ids))


def echoed_each(reply: Any, context: int | None, n: int) -> list[Echoed]:
    """The ``n`` echoes of a list-of-prompts reply, in the prompts' order (by each choice's
    ``index``: every one of 0..n-1 exactly once); each prompt's tokens are its echo less the
    one generated token (vLLM's shape, checked against the usage: the prompts' tokens plus one
    each). The reply's usage goes with the first."""
    ordered = _by_index(reply, n)
    try:
        usage = reply_tokens(reply, context * n if context else None)
    except UsageError as e:
        raise Invalid(str(e)) from None
    parts = []
    for index, choice in enumerate(ordered):
        echo = _echoed_tokens(choice)
        if echo is None:
            raise Malformed(f"choices with index {index} echoed no tokens with log-probs")
        parts.append(echo)
    total = sum(len(t) for t, _ in parts)
    if usage is None or usage.prompt is None or usage.completion != n \
            or total != usage.prompt + n:
        raise Malformed(f"the {total} echoed tokens are not the usage's prompt tokens "
                        f"({usage.prompt if usage else None}) and one generated token for each "
                        f"of the {n} prompts")
    return [Echoed(t[:-1], v[:-1], usage if k == 0 else None)
            for k, (t, v) in enumerate(parts)]


def _by_index(reply: Any, n: int) -> list[dict[str, Any]]:
    """The ``n`` choices of a list-of-prompts reply in the prompts' order: each ``index`` one
    of 0..n-1, every one exactly once (:class:`Malformed` otherwise)."""
    choices = reply.get("choices") if isinstance(reply, dict) else None
    if not isinstance(choices, list) or len(choices) != n:
        got = f"{len(choices)} entries" if isinstance(choices, list) else "not a list"
        raise Malformed(f"choices is {got} for a list of {n} prompts")
    ordered: dict[int, dict[str, Any]] = {}
    for k, choice in enumerate(choices):
        index = choice.get("index") if isinstance(choice, dict) else None
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n \
                or index in ordered:
            why = "repeated" if index in ordered else "not one of 0.." + str(n - 1)
            raise Malformed(f"choices[{k}].index is {index!r} ({why}) for a list of {n} prompts")
        ordered[index] = choice
    return [ordered[index] for index in range(n)]


# How far an echoed log-prob may lie from the same token's top-k log-prob: the README's allowance
# for float order between two computations of one distribution.
PROBE_TOLERANCE = 1e-3


# The probe asks the top few next tokens and echoes each (5: what a server capping log-probs
# allows; a token that merges with the text before it when echoed proves nothing).
PROBE_TOP = 5


def probe_body(model: str, context: str, add_special_tokens: bool) -> dict[str, Any]:
    """The probe's first request: the top next tokens after ``context``, with log-probs."""
    body: dict[str, Any] = {"model": model, "prompt": context, "temperature": 0.0,
                            "max_tokens": 1, "logprobs": PROBE_TOP}
    if not add_special_tokens:
        body["add_special_tokens"] = False
    return body


def ranked_next(reply: Any) -> list[tuple[str, float]]:
    """The top next tokens of a completions reply with ``logprobs`` and their log-probs, best
    first; empty where the reply does not show them."""
    try:
        top = only_choice(reply)["logprobs"]["top_logprobs"][0]
    except (Invalid, KeyError, IndexError, TypeError):
        return []
    if not isinstance(top, dict) or \
            not all(isinstance(v, float | int) and not isinstance(v, bool) for v in top.values()):
        return []
    return sorted(((t, float(v)) for t, v in top.items() if t), key=lambda tv: -tv[1])


@dataclass(frozen=True)
class ProbeVerdict:
    """What the echo probe showed: ``proved`` False where the reply could not show anything
    (the token merged with the context's last one, a malformed reply); else ``problem`` is why
    the echo misreads log-probs, or None where it reads them right."""

    proved: bool
    problem: str | None = None


def probe_echo_body(model: str, texts: list[str], add_special_tokens: bool,
                    lists: bool) -> list[dict[str, Any]]:
    """The probe's echo requests for ``texts`` (its context + each top next token), sent the
    way scoring will send the options (issue 63 item 3: a server may echo one prompt right and
    a list wrong): one request each, or (``lists``, :func:`echo_posts`) one request of their
    list, with scoring's ``logprobs`` 0. Tokens are named by their text, as the top-k names
    them."""
    if lists:
        return [echo_body(model, texts, add_special_tokens, False, 0)]
    return [echo_body(model, text, add_special_tokens, False) for text in texts]


def probe_echoes(replies: list[Any], n: int, lists: bool) -> list[Echoed | None]:
    """The ``n`` echoes of the probe's replies (:func:`probe_echo_body`); None for one that
    cannot be read (a failed request's error text, a malformed reply: it proves nothing)."""
    def read(reply: Any, count: int) -> list[Echoed | None]:
        try:
            return list(echoed_each(reply, None, count) if lists else [echoed(reply)])
        except (Invalid, Retry, Malformed, KeyError, TypeError, AttributeError):
            return [None] * count
    if lists:
        return read(replies[0], n) if replies else [None] * n
    return [read(reply, 1)[0] for reply in replies]


def echo_verdict(next_token: tuple[str, float], echo: Echoed | None) -> ProbeVerdict:
    """``echo`` is of the probe's context followed by one of its top next tokens, whose
    echoed log-prob must be the one the top-k gave at that position (within PROBE_TOLERANCE).
    A server that reads each log-prob from the distribution after its token (llama-cpp-python
    on a model without BOS does) fails it."""
    token, expected = next_token
    if echo is None:
        return ProbeVerdict(proved=False)
    if not echo.tokens or echo.tokens[-1] != token or not isinstance(echo.logprobs[-1], float):
        return ProbeVerdict(proved=False)
    got = echo.logprobs[-1]
    if abs(got - expected) <= PROBE_TOLERANCE:
        return ProbeVerdict(proved=True)
    return ProbeVerdict(proved=True, problem=(
        f"the server's echo does not read a token's log-prob where its top log-probs do "
        f"(probe: token {token!r} after the same text, {got:.4f} echoed against {expected:.4f} "
        "in the top log-probs), so its echoed log-probs cannot be scored"))


def llama_cpp_without_bos(labels: Any) -> str | None:
    """Why echo cannot be trusted on this server, or None: llama-cpp-python (found by its
    /extras/tokenize, :mod:`.label_tokens`) serving a model whose prompts get no BOS. With a BOS
    it drops it and reads each log-prob from the distribution before the token, as it should;
    without one, from the distribution after it (measured: every value near 0)."""
    api, lead = getattr(labels, "api", None), getattr(labels, "lead", None)
    if api is LLAMA_CPP and lead == []:
        return MISALIGNED
    return None
