"""Multiple choice scored by echo on an OpenAI-compatible server (:mod:`.echo_scoring` writes
the bodies and reads the replies; this part posts them): prompt + each option echoed, each
question reported once all its replies are in; and the probe that decides whether this server's
echo can be trusted at all (one per backend and way of echoing).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from .async_http import Call, join_url, server_root
from .base import Failed, Progress, Request, Response, ScoreNext
from .echo_scoring import (
    AUTO,
    ECHO,
    TOKENIZE,
    USE_TOP_K,
    Echoed,
    ProbeVerdict,
    combine,
    echo_posts,
    echo_texts,
    echo_verdict,
    llama_cpp_without_bos,
    probe_body,
    probe_echo_body,
    probe_echoes,
    ranked_next,
)
from .failures import Unsupported
from .label_tokens import LabelTokenError
from .openai_reading import bad_reply
from .openai_server import Server
from .usage import Tokens

Parts = dict[int, "list[Echoed] | Failed"]


class EchoScorer:
    """Echo scoring on ``server``; ``probed``: the probe's verdict, once one proved something
    (:func:`.echo_scoring.echo_verdict`), for each way of echoing (a list of prompts or one a
    request: True, False)."""

    def __init__(self, server: Server):
        self.server = server
        self.probed: dict[bool, ProbeVerdict] = {}

    def run(self, requests: Sequence[Request], which: list[int], urls: list[str],
            progress: Progress | None,
            paid: dict[int, Tokens] | None = None) -> dict[int, Response]:
        """The requests ``which`` scored in echo mode (:func:`.echo_scoring.echo_posts` each;
        the list form on vLLM without --batch), posted in this order; each reported once all
        its replies are in, with their tokens and those of its top-k reply in ``paid``."""
        done: dict[int, Response] = {}
        # only multiple choice is ever echoed (``ScoreNext.echo``)
        scores = {i: q for i in which if isinstance(q := requests[i], ScoreNext)}
        refused = llama_cpp_without_bos(self.server.labels) or self.refused(scores.values())
        calls: list[Call[list[Echoed]]] = []
        owner: list[int] = []
        for i, request in scores.items():
            texts = refused or echo_texts(request)
            if isinstance(texts, str):
                done[i] = _reported(progress, i, Failed(Unsupported(texts)))
                continue
            posts = self._calls(request, texts, urls[i])
            calls += posts
            owner += [i] * len(posts)
        parts: dict[int, Parts] = {i: {} for i in set(owner)}
        need = Counter(owner)

        def finished(k: int, response: list[Echoed] | Failed) -> None:
            i = owner[k]
            parts[i][k] = response
            if len(parts[i]) == need[i]:
                answer = bad_reply(scores[i], combine(
                    scores[i], [parts[i][j] for j in sorted(parts[i])], (paid or {}).get(i)))
                done[i] = _reported(progress, i, answer)

        self.server.post(calls, finished)
        return done

    def _calls(self, request: ScoreNext, texts: list[str], url: str) -> list[Call[list[Echoed]]]:
        """The calls of one question's echo, on replica ``url`` first (its root for
        /tokenize)."""
        out = []
        for post in echo_posts(self.server.model, texts, request.add_special_tokens,
                               self.server.labels.token_ids, self.server.batches is None):
            where = [server_root(u) if post.path == TOKENIZE else u
                     for u in self.server.replicas(url)]
            out.append(Call(join_url(where[0], post.path), post.body,
                            post.reader(self.server.context),
                            tuple(join_url(u, post.path) for u in where[1:])))
        return out

    def refused(self, requests: Iterable[ScoreNext]) -> str | None:
        """Why multiple choice cannot be echoed on this server (the probe below), or None."""
        verdict = self.mcq_probe(requests)
        misread = verdict.problem if verdict else None
        return f"{misread}; {USE_TOP_K}" if misread else None

    def unproven(self, requests: Iterable[Request]) -> bool:
        """Whether the probe's replies came back and showed nothing (a server that ignores
        echo echoes no prompt): whether its echo reads right cannot be told."""
        verdict = self.mcq_probe(r for r in requests if isinstance(r, ScoreNext))
        return verdict is not None and not verdict.proved

    def mcq_probe(self, requests: Iterable[ScoreNext]) -> ProbeVerdict | None:
        """The probe (:meth:`probe`) on the first plain-text prompt of ``requests``, echoed
        the way multiple choice is sent; None where there is none or its requests failed."""
        first = next((r for r in requests if isinstance(r.prompt, str)), None)
        if first is None or not isinstance(first.prompt, str):
            return None
        return self.probe(first.prompt.rstrip(" \t"), first.add_special_tokens, self.lists())

    def lists(self) -> bool:
        """Whether multiple choice is echoed as a list of prompts (:func:`.echo_posts`)."""
        return self.server.labels.token_ids and self.server.batches is None

    def misread(self, context: str, add_special_tokens: bool,
                lists: bool = False) -> str | None:
        """Why this server's echo cannot be scored, or None (:meth:`probe`)."""
        verdict = self.probe(context, add_special_tokens, lists)
        return verdict.problem if verdict else None

    def probe(self, context: str, add_special_tokens: bool,
              lists: bool = False) -> ProbeVerdict | None:
        """Whether this server's echo reads log-probs right: one probe per backend and way of
        echoing (issue 47 item 8; ``lists``: as a list of prompts, the way multiple choice is
        sent on vLLM, issue 63 item 3). The top next tokens after ``context``, then
        ``context`` + each of them echoed: each echoed log-prob must be its top-k one (every
        one is asked: a model sure of its next token gives it nearly 0 at both positions, so
        the first alone may prove nothing). A probe that proves nothing is made again with the
        next echo: its verdict ``proved`` False where the replies came back and showed nothing
        (every token merging with the context, a server ignoring echo), None where its
        requests failed."""
        if lists in self.probed:
            return self.probed[lists]
        model, post = self.server.model, self.server.post_each
        url = join_url(self.server.base_url, "/completions")
        (top,) = post([(url, probe_body(model, context, add_special_tokens))])
        tokens = ranked_next(top) if isinstance(top, dict) else []
        texts = [context + token for token, _ in tokens]
        replies = post([(url, body) for body in probe_echo_body(
            model, texts, add_special_tokens, lists)]) if texts else []
        verdicts = [echo_verdict(token, echo) for token, echo in zip(
            tokens, probe_echoes(replies, len(tokens), lists), strict=True)]
        proved = [v for v in verdicts if v.proved]
        if not proved:
            answered = any(isinstance(r, dict) for r in replies)
            return ProbeVerdict(proved=False) if answered else None
        self.probed[lists] = next((v for v in proved if v.problem), proved[0])
        return self.probed[lists]


def echoed_at_once(requests: Sequence[Request],
                   names: dict[int, dict[str, str] | LabelTokenError], mode: str) -> set[int]:
    """The requests sent straight to echo: every multiple-choice one in echo mode; in auto,
    those whose options the top-k cannot name (their first tokens, as the server tokenises
    them alone, clash), read in context by echo as hf: reads them."""
    def straight(i: int, request: Request) -> bool:
        if not isinstance(request, ScoreNext) or not request.echo:
            return False
        if mode == ECHO:
            return True
        return mode == AUTO and isinstance(request.prompt, str) and \
            isinstance(names.get(i), LabelTokenError)

    return {i for i, q in enumerate(requests) if straight(i, q)}


def _reported(progress: Progress | None, i: int, response: Response) -> Response:
    """``response``, reported as request ``i``'s."""
    if progress:
        progress(i, response)
    return response
