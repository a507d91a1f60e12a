"""What every backend over an HTTP API sets up the same way (``openai:``, ``openai-embed:``,
``moderation:``): its key, the JSON headers that carry it, one :class:`.JsonClient`, and
``scrub``, which takes the key and every secret in the URLs (user information, secret query
parameters) out of any server text before it is kept, so no log, cache, result or report holds
one."""

from __future__ import annotations

import os

from .async_http import JsonClient, base_urls, scrub_secrets
from .base import Backend
from .config import BackendConfig
from .secrets import url_secrets

OPENAI_URL = "https://api.openai.com/v1"


def openai_urls(base_url: str | None) -> list[str]:
    """``--base-url``, else ``$OPENAI_BASE_URL``, else api.openai.com: one or more replicas."""
    return base_urls(base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL)


def bearer(key: str) -> dict[str, str]:
    """The OpenAI-style auth header; none without a key (a local server needs none)."""
    return {"Authorization": f"Bearer {key}"} if key else {}


def check_base_url(cls: type[Backend], target: str, config: BackendConfig) -> None:
    """A bad port or scheme in --base-url: one line before anything loads."""
    if config.base_url:
        base_urls(config.base_url)


class ApiBackend(Backend):
    """A backend whose requests go to an HTTP API through :meth:`connect`'s client."""

    _key = ""
    _secret_urls: tuple[str, ...] = ()

    def connect(self, key: str, urls: list[str], auth: dict[str, str], *, timeout: float,
                max_retries: int, concurrency: int, rate_limit: float | None,
                max_reply_mb: float) -> None:
        """Keep ``key`` (for :meth:`scrub` only) and ``urls`` (whose secrets it scrubs too), and
        make ``self.headers`` (JSON, with ``auth``) and ``self.client``."""
        self._key, self._secret_urls = key, tuple(urls)
        self.headers = {"Content-Type": "application/json", **auth}
        self.client = JsonClient(headers=self.headers, timeout=timeout, max_retries=max_retries,
                                 concurrency=concurrency, rate_limit=rate_limit,
                                 scrub=self.scrub, max_reply_mb=max_reply_mb)

    def scrub(self, text: str, limit: int = 200) -> str:
        return scrub_secrets(text, [self._key, *(s for u in self._secret_urls
                                                 for s in url_secrets(u))], limit)
