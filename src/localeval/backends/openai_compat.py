"""Any OpenAI-compatible server (vLLM, SGLang, llama.cpp server, TGI, hosted APIs), over httpx.

- ScoreNext is **one** request per question, never one per option: ``max_tokens=1`` with the top
  ``top_logprobs`` log-probs of the next token; each candidate is looked up among them. A
  candidate outside the top-k gets ``None`` (it is less likely than all of them); if no
  candidate is in the top-k the request fails with that reason.
- Requests are sent in the order of their prompt text, so prompts sharing a prefix (a subject's
  few-shot block, a guard's template) arrive back to back and a server with prefix caching
  (vLLM ``--enable-prefix-caching``, SGLang's radix cache) reuses it. With several base URLs
  (replicas), consecutive blocks of that order go to one replica in turn: each replica sees
  whole prefix groups, and the load is spread.
- Up to ``concurrency`` requests are in flight (one async client, pooled connections), at most
  ``rate_limit`` started per second when set. A request is retried up to ``max_retries`` times
  with exponential backoff and jitter on 408, 429, 5xx, timeouts, connection errors and
  truncated or non-JSON bodies, waiting as long as a ``Retry-After`` header asks (capped).
  Other 4xx fail at once. Each response is reported as it finishes, so the run stores it.
- Chat prompts go to ``/v1/chat/completions``; a final assistant message is sent as a prefill
  with ``continue_final_message`` (a vLLM/SGLang extension; plain OpenAI ignores it).
- The API key comes from an environment variable (``OPENAI_API_KEY`` by default, or the one
  named by ``api_key_env``) and is never part of the identity, logs, caches or results: error
  text from a server is cut short and scrubbed of the key and of anything that looks like one.

httpx rather than the ``openai`` SDK: the SDK has no completions ``echo``/vLLM extra fields
without workarounds, hides the raw body we need for truncation checks, and retries on its own
terms; httpx gives one async connection pool and leaves the retry policy to us.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from typing import Any

from ..errors import LocalevalError
from .async_http import RETRY_STATUS, Pacer, backoff, check_positive, retry_after, run_coroutine
from .base import Generate, Prompt, Request, Response, ScoreNext

REPLICA_BLOCK = 8  # consecutive (prefix-sorted) requests sent to one replica
NO_LOGPROBS = "the server returned no log-probs"


class OpenAIBackend:
    def __init__(self, model: str, *, base_url: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", top_logprobs: int = 20,
                 concurrency: int = 8, timeout: float = 120.0, max_retries: int = 4,
                 rate_limit: float | None = None):
        import httpx

        self.httpx = httpx
        self.model = model
        urls = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        self.base_urls = [u.strip().rstrip("/") for u in str(urls).split(",") if u.strip()]
        self._api_key = os.environ.get(api_key_env, "")
        self.top_logprobs, self.timeout, self.max_retries = top_logprobs, timeout, max_retries
        check_positive(concurrency=concurrency, timeout=timeout, rate_limit=rate_limit)
        self.concurrency, self.rate_limit = concurrency, rate_limit
        self.stats = {"requests": 0, "http_calls": 0, "retries": 0, "failed": 0}
        self._context = min((self._model_info(u).get("max_model_len") or 0
                             for u in self.base_urls), default=0) or None
        self.identity = {"backend": "openai", "model": model,
                         "base_url": self.base_urls[0] if len(self.base_urls) == 1
                         else self.base_urls, "top_logprobs": top_logprobs}

    @property
    def base_url(self) -> str:
        return self.base_urls[0]

    # ---------------------------------------------------------------- setup
    def _headers(self) -> dict:
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _model_info(self, base_url: str) -> dict:
        try:
            resp = self.httpx.get(base_url + "/models", headers=self._headers(),
                                  timeout=min(self.timeout, 30.0))
            resp.raise_for_status()
            models = resp.json().get("data", [])
        except (self.httpx.HTTPError, ValueError) as e:
            raise LocalevalError(f"cannot reach an OpenAI-compatible server at {base_url} "
                                 f"({self.scrub(str(e))}); start it or pass --base-url") from None
        for m in models:
            if m.get("id") == self.model:
                return m
        names = ", ".join(str(m.get("id", "?")) for m in models) or "none"
        raise LocalevalError(f"server {base_url} does not serve model {self.model!r}; "
                             f"it serves: {names}")

    def scrub(self, text: str, limit: int = 200) -> str:
        """Server text made safe to store or print: the key and anything shaped like a key or a
        bearer token removed, whitespace collapsed, cut to ``limit`` characters."""
        if self._api_key:
            text = text.replace(self._api_key, "[key]")
        text = re.sub(r"(?i)(bearer|authorization|api[-_]?key|x-api-key)([\"':= ]+)\S+",
                      r"\1\2[key]", text)
        text = re.sub(r"\b(sk|pk|rk)-[A-Za-z0-9_\-]{8,}", "[key]", text)
        text = " ".join(text.split())
        return text if len(text) <= limit else text[: limit - 1] + "…"

    # ---------------------------------------------------------------- protocol
    def max_context(self) -> int | None:
        return self._context

    def count_tokens(self, prompt: Prompt) -> int | None:
        """Via vLLM's /tokenize; None where the server has no such endpoint."""
        body: dict[str, Any] = {"model": self.model}
        body.update({"prompt": prompt} if isinstance(prompt, str) else {"messages": prompt})
        try:
            resp = self.httpx.post(self.base_url.removesuffix("/v1") + "/tokenize", json=body,
                                   headers=self._headers(), timeout=self.timeout)
            resp.raise_for_status()
            return int(resp.json()["count"])
        except (self.httpx.HTTPError, KeyError, ValueError, TypeError):
            return None

    def run(self, requests: list[Request], progress=None) -> list[Response]:
        """Every request, ``concurrency`` at a time; each response reported as it finishes."""
        if not requests:
            return []
        out = run_coroutine(self._run_all(requests, progress))
        self.stats["requests"] += len(requests)
        self.stats["failed"] += sum(1 for r in out if r.error)
        scores = [r for q, r in zip(requests, out, strict=True) if isinstance(q, ScoreNext)]
        if scores and all(r.error and r.error.startswith(NO_LOGPROBS) for r in scores):
            raise LocalevalError(f"{self.base_url} returns no log-probs for model "
                                 f"{self.model!r}; use --method generation (or a server that "
                                 "supports logprobs, e.g. vLLM with --max-logprobs)")
        return out

    async def _run_all(self, requests: list[Request], progress) -> list[Response]:
        order = sorted(range(len(requests)), key=lambda i: _prompt_key(requests[i].prompt))
        out: list[Response | None] = [None] * len(requests)
        gate = asyncio.Semaphore(self.concurrency)
        pace = Pacer(self.rate_limit)
        limits = self.httpx.Limits(max_connections=self.concurrency,
                                   max_keepalive_connections=self.concurrency)
        async with self.httpx.AsyncClient(timeout=self.timeout, limits=limits,
                                          headers=self._headers()) as client:
            async def one(rank: int, i: int) -> None:
                url = self.base_urls[(rank // REPLICA_BLOCK) % len(self.base_urls)]
                async with gate:
                    out[i] = await self._one(client, url, requests[i], pace)
                if progress:
                    progress(i, out[i])

            await asyncio.gather(*(one(rank, i) for rank, i in enumerate(order)))
        return out  # type: ignore[return-value]

    async def _one(self, client, url: str, request: Request, pace: Pacer) -> Response:
        path, body = self._request_body(request)
        last = ""
        for attempt in range(self.max_retries + 1):
            await pace.wait()
            self.stats["http_calls"] += 1
            outcome, wait = await self._attempt(client, url + path, body, request)
            if isinstance(outcome, Response):
                return outcome
            last = outcome
            if wait is None or attempt == self.max_retries:
                break
            self.stats["retries"] += 1
            await asyncio.sleep(wait if wait > 0 else backoff(attempt))
        return Response(error=last)

    async def _attempt(self, client, url: str, body: dict,
                       request: Request) -> tuple[Response | str, float | None]:
        """(the response, or the error text and how long to wait before a retry: 0 = the
        backoff, None = do not retry)."""
        httpx = self.httpx
        try:
            resp = await client.post(url, content=json.dumps(body, ensure_ascii=False).encode())
        except httpx.TimeoutException:
            return f"timeout after {self.timeout:g} s from {url}", 0
        except httpx.HTTPError as e:  # connection refused/reset, truncated body, protocol error
            return f"connection error with {url}: {self.scrub(f'{type(e).__name__}: {e}')}", 0
        if resp.status_code != 200:
            error = f"HTTP {resp.status_code} from {url}: {self.scrub(resp.text)}"
            if resp.status_code in RETRY_STATUS or resp.status_code >= 500:
                return error, retry_after(resp.headers.get("retry-after"))
            return error, None
        try:
            choice = resp.json()["choices"][0]
        except (ValueError, KeyError, IndexError, TypeError):
            return f"malformed reply from {url}: {self.scrub(resp.text, 80)!r}", 0
        parsed = self._parse(request, choice)
        retry = parsed.error is not None and parsed.error.startswith(NO_LOGPROBS)
        return (parsed.error, 0) if retry else (parsed, None)

    def _request_body(self, request: Request) -> tuple[str, dict]:
        if isinstance(request, ScoreNext):
            path, body = self._body(request.prompt, max_tokens=1)
            if path == "/completions":
                body["logprobs"] = self.top_logprobs
                if not request.add_special_tokens:
                    body["add_special_tokens"] = False  # vLLM's extra parameter: no BOS
            else:
                body.update(logprobs=True, top_logprobs=self.top_logprobs)
            return path, body
        if isinstance(request, Generate):
            path, body = self._body(request.prompt, max_tokens=request.max_tokens)
            if request.stop:
                body["stop"] = list(request.stop)
            return path, body
        raise LocalevalError(f"the openai backend cannot run {type(request).__name__} requests")

    def _body(self, prompt: Prompt, **extra) -> tuple[str, dict]:
        body = {"model": self.model, "temperature": 0.0, **extra}
        if isinstance(prompt, str):
            return "/completions", {**body, "prompt": prompt}
        body["messages"] = list(prompt)
        if prompt and prompt[-1]["role"] == "assistant":
            body.update(continue_final_message=True, add_generation_prompt=False)
        return "/chat/completions", body

    def _parse(self, request: Request, choice: dict) -> Response:
        if isinstance(request, Generate):
            text = choice.get("text")
            if text is None:
                text = (choice.get("message") or {}).get("content") or ""
            return Response(text=text)
        top = _top_logprobs(choice)
        if top is None:
            return Response(error=f"{NO_LOGPROBS}; does {self.base_url} support logprobs? "
                                  "use --method generation otherwise")
        found = {c: top.get(c) for c in request.candidates}
        if all(v is None for v in found.values()):
            return Response(error=f"no candidate among the top {self.top_logprobs} next tokens "
                                  f"({', '.join(list(top)[:5])}, …); raise --top-logprobs")
        return Response(logprobs=found)


def _prompt_key(prompt: Prompt) -> str:
    return prompt if isinstance(prompt, str) else json.dumps(prompt, ensure_ascii=False)


def _top_logprobs(choice: dict) -> dict[str, float] | None:
    """The first generated position's top log-probs, from either API's response shape."""
    lp = choice.get("logprobs")
    if not lp:
        return None
    if "top_logprobs" in lp and lp["top_logprobs"]:  # completions API
        return dict(lp["top_logprobs"][0])
    content = lp.get("content")  # chat completions API
    if content:
        return {t["token"]: t["logprob"] for t in content[0].get("top_logprobs", [])}
    return None
