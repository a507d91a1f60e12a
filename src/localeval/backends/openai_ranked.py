"""A guard's first labelled position read a second time on an OpenAI-compatible server
(:mod:`.ranked_reading` says when, and checks that the second read is the same reading): up to
that position, with --top-logprobs, or its labels asked by id where the server reads them
(:mod:`.openai_ids`); each reported as its second reply comes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .async_http import Call, Invalid
from .base import NextLogprobs, Progress, Request, Response, ScoreNext
from .label_tokens import LabelTokenError
from .openai_bodies import CHAT, Bodies
from .openai_ids import IdReader, labels_read
from .openai_reading import read_choice, valid
from .openai_server import Server
from .ranked_reading import lacks_a_value, needs_whole_read, same_reading
from .replies import generated_tokens, only_choice
from .usage import Tokens, UsageError, reply_tokens, summed, with_tokens

Names = dict[int, dict[str, str] | LabelTokenError]


class WholeRead:
    """Second reads on ``server``, written by ``bodies``, by id through ``ids``."""

    def __init__(self, server: Server, bodies: Bodies, ids: IdReader):
        self.server, self.bodies, self.ids = server, bodies, ids

    def needed(self, request: Request, response: Response) -> bool:
        """Whether the first labelled position is read a second time: where a label lacks a
        value there, by id (any --top-logprobs: :meth:`call`), else where --top-logprobs asks
        more than the first read did."""
        return isinstance(request, ScoreNext) and (
            needs_whole_read(request, response, self.server.top_logprobs)
            or (self.ids.labels_by_id(request) is not None and lacks_a_value(request, response)))

    def read(self, requests: Sequence[Request], out: list[Response | None], urls: list[str],
             names: Names, progress: Progress | None, greedy: dict[int, list[str] | None]
             ) -> list[Response | None]:
        """``out`` with each first-labelled position that must be read over the whole
        vocabulary read again, compared with the first read (``greedy``: its generated
        tokens)."""
        again = list(out)
        which: list[int] = []
        calls: list[Call[Response]] = []
        for i, (request, first) in enumerate(zip(requests, out, strict=True)):
            named = names.get(i)
            if isinstance(request, ScoreNext) and isinstance(first, NextLogprobs) \
                    and not isinstance(named, LabelTokenError) and self.needed(request, first):
                which.append(i)
                calls.append(self.call(urls[i], request, first, named, greedy.get(i)))

        def report(k: int, response: Response) -> None:
            if progress is not None:
                progress(which[k], response)

        for i, response in zip(which, self.server.post(calls, report), strict=True):
            again[i] = response
        return again

    def call(self, url: str, request: ScoreNext, first: NextLogprobs,
             names: dict[str, str] | None, before: list[str] | None) -> Call[Response]:
        """The second request of a whole-vocabulary read: ``first``'s position generated
        again with --top-logprobs, which must be the same reading (``before``: the first
        read's generated tokens; :func:`.ranked_reading.same_reading`)."""
        path, body = self.bodies.request(request, read_to=(first.position or 0) + 1)
        paid = Tokens(first.n_prompt_tokens, first.n_completion_tokens, first.n_cached_tokens)
        label_ids = self.ids.labels_by_id(request)
        if label_ids is not None:  # the labels asked by id at each position (id_scoring)
            body.update(logprobs=1, logprob_token_ids=label_ids)
        server = self.server

        def parse(reply: Any) -> Response:
            choice = only_choice(reply)
            read = read_choice(request, choice, path == CHAT, server.top_logprobs,
                               server.base_url, names) \
                if label_ids is None else labels_read(request, first, choice, label_ids)
            changed = same_reading(first, before, read, generated_tokens(choice))
            if changed:
                raise Invalid(changed)
            try:
                tokens = reply_tokens(reply, server.context)
            except UsageError as e:
                raise Invalid(str(e)) from None
            return valid(request, with_tokens(read, summed([paid, tokens])))
        return server.call(url, path, body, parse)
