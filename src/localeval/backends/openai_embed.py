"""``openai-embed:<model>``: sentence embeddings from an OpenAI-compatible ``/v1/embeddings``
endpoint (api.openai.com, vLLM, TEI, llama.cpp). It executes ``Embed`` requests, one text per
call, as IRIS ``guard_models/lion_guard.py`` ``LionGuard2.predict`` sends them
(``client.embeddings.create(input=text, model="text-embedding-3-large", dimensions=3072)``;
3,072 is that model's own size, so nothing is sent for it). The server and key come from
``--base-url`` / ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` (``--api-key-env``), as ``openai:``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import partial
from typing import Any

from ..errors import LocalevalError
from .api_access import ApiBackend, bearer, check_base_url, openai_urls
from .async_http import Call, join_url, public_url
from .base import Embed, Embedding, Failed, Progress, Request, Response, only
from .config import DEFAULT_MAX_REPLY_MB, BackendConfig
from .failures import BadReply
from .options import OpenAIEmbedOptions
from .reply_checks import response_problem
from .secrets import query_digest


class OpenAIEmbeddingBackend(ApiBackend):
    Options = OpenAIEmbedOptions  # the options it takes (.options: --help reads them there)

    @classmethod
    def preflight(cls, target: str, config: BackendConfig) -> None:
        check_base_url(cls, target, config)

    def __init__(self, model: str, *, base_url: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", concurrency: int = 8,
                 timeout: float = 120.0, max_retries: int = 4, rate_limit: float | None = None,
                 max_reply_mb: float = DEFAULT_MAX_REPLY_MB):
        if not model:
            raise LocalevalError("openai-embed needs a model: openai-embed:text-embedding-3-large")
        self.model = model
        self.url = openai_urls(base_url)[0]
        key = os.environ.get(api_key_env, "")
        self.connect(key, [self.url], bearer(key), timeout=timeout, max_retries=max_retries,
                     concurrency=concurrency, rate_limit=rate_limit, max_reply_mb=max_reply_mb)
        self.stats = self.client.stats
        self.identity = {"backend": "openai-embed", "model": model,
                         "base_url": public_url(self.url),  # never the key
                         **query_digest([self.url])}

    def run(self, requests: Sequence[Request],
            progress: Progress | None = None) -> Sequence[Response]:
        embeds = only(Embed, requests, "an openai-embed backend runs Embed requests only (use "
                      "it through an embedding guard, e.g. --guard lionguard2)")
        calls = [Call(join_url(self.url, "/embeddings"), {"model": self.model, "input": r.text},
                      partial(_vector, r)) for r in embeds]
        return self.client.post_all(calls, progress)


def _vector(request: Embed, reply: Any) -> Response:
    """``data[0].embedding`` of the reply; a reply of another shape is retried as malformed, a
    vector that is not one (NaN, strings, empty) fails with the reason."""
    vector = reply["data"][0]["embedding"]  # KeyError/TypeError/IndexError: malformed
    response = Embedding(embedding=vector)
    problem = response_problem(request, response)
    return Failed(BadReply(f"invalid embedding: {problem}")) if problem else response
