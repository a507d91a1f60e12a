"""One OpenAI-compatible server (and its replicas) as every part of the ``openai:`` backend
sees it: the served model, where to post (directly, ``concurrency`` in flight, or through the
Batch API with ``--batch``: :mod:`.openai_batch`), the model's context length and how answer
options are named (:mod:`.label_tokens`). The backend's parts (:mod:`.openai_echo`,
:mod:`.openai_ids`, :mod:`.openai_ranked`, :mod:`.openai_metering`) share this one object
instead of passing the server's settings to each other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..errors import LocalevalError
from .async_http import Call, JsonClient, join_url, public_url, server_root
from .base import Failed
from .label_tokens import WholeText
from .openai_batch import BatchPoster

T = TypeVar("T")
Json = dict[str, Any]


@dataclass
class Server:
    """The server's settings and client: ``httpx`` (the module, for the GETs at start-up),
    ``headers`` (with the key), ``scrub`` (takes every secret out of server text)."""

    httpx: Any
    model: str
    base_urls: list[str]
    client: JsonClient
    headers: dict[str, str]
    scrub: Callable[..., str]
    timeout: float
    top_logprobs: int
    batches: BatchPoster | None = None
    context: int | None = None  # the smallest max_model_len of the replicas, where known
    # how the server's top log-probs name an answer option (set once the server is reached)
    labels: WholeText = field(default_factory=WholeText)
    by_id: bool = False  # a probe proved the server reads log-probs by token id

    @property
    def base_url(self) -> str:
        return self.base_urls[0]

    @property
    def root(self) -> str:
        """The server's root, where vLLM and llama-cpp-python put their tokenize endpoints."""
        return server_root(self.base_url)

    def replicas(self, url: str) -> list[str]:
        """``url`` first, then the other replicas: where a call goes if ``url`` dies."""
        return [url, *(u for u in self.base_urls if u != url)]

    def call(self, url: str, path: str, body: Json, parse: Callable[[Any], T],
             **more: Any) -> Call[T]:
        """A call of ``path`` on replica ``url``, falling over to the others."""
        return Call(join_url(url, path), body, parse,
                    tuple(join_url(u, path) for u in self.base_urls if u != url), **more)

    def post(self, calls: Sequence[Call[T]],
             report: Callable[[int, T | Failed], None] | None = None,
             order: Sequence[int] | None = None) -> list[T | Failed]:
        """The calls directly (``concurrency`` in flight), or as Batch API jobs (--batch)."""
        if self.batches:
            return self.batches.post_all(calls, report)
        return self.client.post_all(calls, report, order)

    def post_each(self, posts: list[tuple[str, Json]]) -> list[Json | str]:
        """Each (url, body) posted through the client (its retries, deadline, key and
        scrubbing): the reply's JSON, or the error text. For label tokens and probes."""
        replies: dict[int, Json] = {}

        def keeper(k: int) -> Callable[[Json], Json]:
            def keep(reply: Json) -> Json:
                replies[k] = reply
                return reply
            return keep

        out = self.client.post_all([Call(url, body, keeper(k), counted=False)
                                    for k, (url, body) in enumerate(posts)])
        return [r.error if isinstance(r, Failed) else replies[k] for k, r in enumerate(out)]

    def get(self, url: str) -> Any:
        """A GET at start-up (``/models``, ``/openapi.json``): the httpx response."""
        return self.httpx.get(url, headers=self.headers, timeout=min(self.timeout, 30.0))

    def model_info(self, base_url: str, api_key_env: str) -> Json:
        """What replica ``base_url``'s ``/models`` says of the served model, or one line saying
        why the server cannot run it (unreachable, the key refused, the model not served)."""
        try:
            resp = self.get(join_url(base_url, "/models"))
            if resp.status_code in (401, 403):
                raise LocalevalError(f"the server at {public_url(base_url)} rejected the API key "
                                     f"(HTTP {resp.status_code}): check ${api_key_env}")
            resp.raise_for_status()
            reply = resp.json()
        except (self.httpx.HTTPError, ValueError) as e:
            raise LocalevalError(f"cannot reach an OpenAI-compatible server at "
                                 f"{public_url(base_url)} ({self.scrub(str(e))}); start it or "
                                 "pass --base-url") from None
        # the endpoint named whole, then redacted: its query after its path (not "…?k=***/models")
        models = served_models(reply, public_url(join_url(base_url, "/models")))
        for m in models:
            if m["id"] == self.model:
                return m
        names = ", ".join(m["id"] for m in models) or "none"
        raise LocalevalError(f"server {public_url(base_url)} does not serve model "
                             f"{self.model!r}; it serves: {self.scrub(names, 500)}")


def served_models(reply: Any, url: str) -> list[Json]:
    """The models of a ``/v1/models`` reply (``{"data": [{"id": …, "max_model_len": …}]}``,
    from ``url``, as it may be printed), checked: one line naming the server and what is
    wrong, never a traceback or a guess."""
    def bad(what: str) -> LocalevalError:
        return LocalevalError(f"{url} replied {what}, not the OpenAI list of models "
                              '({"data": [{"id": …}]}); is this an OpenAI-compatible server?')

    data = reply.get("data") if isinstance(reply, dict) else None
    if not isinstance(data, list):
        return_what = (f"with data {type(data).__name__}" if isinstance(reply, dict)
                       else f"a JSON {type(reply).__name__}")
        raise bad(return_what)
    for k, m in enumerate(data):
        if not isinstance(m, dict) or not isinstance(m.get("id"), str):
            raise bad(f"with data[{k}] = {str(m)[:40]!r}")
        length = m.get("max_model_len")
        if length is not None and (isinstance(length, bool) or not isinstance(length, int)
                                   or length < 1):
            raise bad(f"with max_model_len {length!r} for {m['id'][:40]!r} (a positive "
                      "integer)")
    return data
