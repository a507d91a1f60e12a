"""Tokens on an OpenAI-compatible server (what ``--price`` and a budget count): an answer the
server sent no ``usage`` for, counted with ``--tokenizer`` or the server's ``/tokenize`` where
either exists (else left uncounted, and the budget then stops); and the most a request may be
billed before it is sent (:meth:`Meter.cost_bound`), whatever ``--scoring`` sends for it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from .async_http import join_url
from .base import (
    Answered,
    Generate,
    Generated,
    Progress,
    Prompt,
    Request,
    Response,
    ScoreNext,
    TextLogprobs,
)
from .echo_scoring import ECHO, TOP_K, echo_body, echo_texts
from .label_tokens import NamedTokenizer
from .openai_bodies import Bodies, Body, NoPrefill
from .openai_server import Server
from .usage import MAX_TOKEN_COUNT

Meterer = Callable[[int, Response], Response]


class Meter:
    """Counting on ``server``, its requests written by ``bodies``, scored by ``scoring``."""

    def __init__(self, server: Server, bodies: Bodies, scoring: str):
        self.server, self.bodies, self.scoring = server, bodies, scoring
        self.tokenize = True  # False once the server said it has no /tokenize

    def count_tokens(self, prompt: Prompt, add_special_tokens: bool = True) -> int | None:
        """With --tokenizer, else via vLLM's /tokenize; None where neither counts (a server
        without /tokenize is asked once)."""
        labels = self.server.labels
        if isinstance(labels, NamedTokenizer):  # --tokenizer's
            return local_count(labels.tok, prompt, add_special_tokens)
        if not self.tokenize:
            return None
        server = self.server
        body: Body = {"model": server.model}
        body.update({"prompt": prompt} if isinstance(prompt, str) else {"messages": prompt})
        if not add_special_tokens and isinstance(prompt, str):
            body["add_special_tokens"] = False
        try:
            resp = server.httpx.post(join_url(server.root, "/tokenize"), json=body,
                                     headers=server.headers, timeout=server.timeout)
            if resp.status_code in (404, 405, 501):  # no such endpoint: not asked again
                self.tokenize = False
            resp.raise_for_status()
            count = resp.json()["count"]
        except (server.httpx.HTTPError, KeyError, ValueError, TypeError):
            return None
        return count if isinstance(count, int) and not isinstance(count, bool) \
            and 0 <= count <= MAX_TOKEN_COUNT else None

    def metering(self, requests: Sequence[Request], progress: Progress | None
                 ) -> tuple[Progress, Meterer]:
        """``progress``, and ``meter(i, response)``: request ``i``'s answer, counted by
        :meth:`metered` once, whether it is reported or returned."""
        done: dict[int, tuple[Response, Response]] = {}  # i: (as it came, as counted)

        def meter(i: int, response: Response) -> Response:
            if i not in done or done[i][0] is not response:
                done[i] = (response, self.metered(requests[i], response))
            return done[i][1]

        def report(i: int, response: Response) -> None:
            if progress is not None:
                progress(i, meter(i, response))
        return report, meter

    def metered(self, request: Request, response: Response) -> Response:
        """An answer the server sent no usage for, counted with the served tokenizer
        (/tokenize) or --tokenizer (issue 47 item 9): the prompt, and the generated text (one
        token where a single one is asked for); as it is where neither can count it, so
        the run's usage says it is uncounted. /tokenize is asked synchronously as each answer
        is reported: slow, but only on a server that sends no usage and has the endpoint."""
        if not isinstance(response, Answered) or not isinstance(request, ScoreNext | Generate) \
                or response.n_prompt_tokens is not None \
                or response.n_completion_tokens is not None:
            return response
        prompt = self.count_tokens(request.prompt, request.add_special_tokens is not False)
        completion = self.count_tokens(response.text, False) \
            if isinstance(response, Generated) else 1
        if prompt is None or completion is None:
            return response
        return replace(response, n_prompt_tokens=prompt, n_completion_tokens=completion)

    def cost_bound(self, request: Request) -> tuple[int, int]:
        """At most how many (prompt, completion) tokens ``request`` may be billed, whatever
        --scoring sends for it (the top-k request, and echo's 1 + #options): each body's UTF-8
        JSON bytes as prompt tokens (an over-estimate without a tokenizer: a token is at least
        one byte of its text, and the JSON around the text outweighs a chat template's own
        tokens), and its ``max_tokens`` as completion tokens."""
        bodies = self._top_k_bodies(request) + self._echo_bodies(request)
        return (sum(len(json.dumps(b, ensure_ascii=False).encode()) for b in bodies),
                sum(b.get("max_tokens") or 0 for b in bodies))

    def _top_k_bodies(self, request: Request) -> list[Body]:
        """The bodies sent for ``request`` before any echo (none where echo is all)."""
        if isinstance(request, TextLogprobs):
            return [{"prompt": request.text, "max_tokens": 1}]
        if isinstance(request, ScoreNext) and request.echo and self.scoring == ECHO:
            return []
        bodies: list[Body] = []
        try:
            bodies.append(self.bodies.request(request)[1])
            if isinstance(request, ScoreNext) and request.whole_vocabulary:
                # the labelled position read again, at worst the last one
                bodies.append(self.bodies.request(request, read_to=request.positions)[1])
        except NoPrefill:
            pass  # never sent
        return bodies

    def _echo_bodies(self, request: Request) -> list[Body]:
        """The bodies echo may send for ``request`` (multiple choice, unless top-k only)."""
        if not (isinstance(request, ScoreNext) and request.echo and self.scoring != TOP_K):
            return []
        texts = echo_texts(request)
        if not isinstance(texts, list):
            return []
        return [echo_body(self.server.model, text, request.add_special_tokens,
                          self.server.labels.token_ids) for text in texts]


def local_count(tokenizer: Any, prompt: Prompt, add_special_tokens: bool) -> int | None:
    """The prompt's tokens by a transformers tokenizer (a chat one through its template)."""
    try:
        if isinstance(prompt, str):
            return len(tokenizer(prompt, add_special_tokens=add_special_tokens)["input_ids"])
        ids = tokenizer.apply_chat_template(list(prompt), tokenize=True,
                                            add_generation_prompt=True)
        return len(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)
    except Exception:  # a template that refuses these messages: uncounted, never a crash
        return None
