"""Any OpenAI-compatible server (vLLM, SGLang, llama.cpp server, TGI, hosted APIs).

- ScoreNext is **one** request per question, never one per option: ``max_tokens=1`` with the top
  ``top_logprobs`` log-probs of the next token; each candidate is looked up among them. A
  candidate outside the top-k gets ``None`` (it is less likely than all of them); if no
  candidate is in the top-k the request fails with that reason.
- Requests are sent in the order of their prompt text, so prompts sharing a prefix (a subject's
  few-shot block, a guard's template) arrive back to back and a server with prefix caching
  (vLLM ``--enable-prefix-caching``, SGLang's radix cache) reuses it.
- Chat prompts go to ``/v1/chat/completions``; a final assistant message is sent as a prefill
  with ``continue_final_message`` (a vLLM/SGLang extension; plain OpenAI ignores it).
- The API key comes from an environment variable (``OPENAI_API_KEY`` by default, or the one
  named by ``api_key_env``) and is never part of the identity, logs, caches or results.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from ..errors import LocalevalError
from .base import Generate, Prompt, Request, Response, ScoreNext


class OpenAIBackend:
    def __init__(self, model: str, *, base_url: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", top_logprobs: int = 20,
                 concurrency: int = 8, timeout: float = 120.0, max_retries: int = 4):
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL")
                         or "https://api.openai.com/v1").rstrip("/")
        self._api_key = os.environ.get(api_key_env, "")
        self.top_logprobs = top_logprobs
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_retries = max_retries
        self.stats = {"requests": 0, "http_calls": 0}
        self._context = self._model_info().get("max_model_len")
        self.identity = {"backend": "openai", "model": model, "base_url": self.base_url,
                         "top_logprobs": top_logprobs}

    # ---------------------------------------------------------------- HTTP
    def _headers(self) -> dict:
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _post(self, path: str, body: dict) -> dict:
        data = json.dumps(body, ensure_ascii=False).encode()
        headers = self._headers()
        last = ""
        for attempt in range(self.max_retries + 1):
            req = urllib.request.Request(self.base_url + path, data=data, headers=headers)
            try:
                self.stats["http_calls"] += 1
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    return json.loads(resp.read())
            except urllib.error.HTTPError as e:
                detail = e.read().decode(errors="replace")[:300]
                last = f"HTTP {e.code} from {self.base_url}{path}: {detail}"
                if e.code not in (408, 429) and e.code < 500:
                    raise _RequestFailed(last) from None
            except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
                reason = getattr(e, "reason", e)
                last = f"cannot reach {self.base_url}{path}: {reason}"
            if attempt < self.max_retries:
                time.sleep(min(0.5 * 2**attempt, 8.0))
        raise _RequestFailed(last)

    def _model_info(self) -> dict:
        try:
            req = urllib.request.Request(self.base_url + "/models", headers=self._headers())
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                models = json.loads(resp.read()).get("data", [])
        except (urllib.error.URLError, TimeoutError, ConnectionError, ValueError) as e:
            raise LocalevalError(
                f"cannot reach an OpenAI-compatible server at {self.base_url} "
                f"({getattr(e, 'reason', e)}); start it or pass --base-url") from None
        for m in models:
            if m.get("id") == self.model:
                return m
        names = ", ".join(m.get("id", "?") for m in models) or "none"
        raise LocalevalError(f"server {self.base_url} does not serve model {self.model!r}; "
                             f"it serves: {names}")

    # ---------------------------------------------------------------- protocol
    def max_context(self) -> int | None:
        return self._context

    def count_tokens(self, prompt: Prompt) -> int | None:
        """Via vLLM's /tokenize; None where the server has no such endpoint."""
        body = {"model": self.model}
        body.update({"prompt": prompt} if isinstance(prompt, str) else {"messages": prompt})
        try:
            base = self.base_url.removesuffix("/v1")
            req = urllib.request.Request(base + "/tokenize", data=json.dumps(body).encode(),
                                         headers=self._headers())
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return int(json.loads(resp.read())["count"])
        except (urllib.error.URLError, KeyError, ValueError, TimeoutError):
            return None

    def run(self, requests: list[Request], progress=None) -> list[Response]:
        order = sorted(range(len(requests)), key=lambda i: _prompt_key(requests[i].prompt))
        out: list[Response | None] = [None] * len(requests)

        def one(i: int) -> None:
            out[i] = self._one(requests[i])
            if progress:
                progress(i, out[i])

        with ThreadPoolExecutor(self.concurrency) as pool:
            list(pool.map(one, order))  # map submits in order: prefix neighbours go together
        self.stats["requests"] += len(requests)
        return out  # type: ignore[return-value]

    def _one(self, request: Request) -> Response:
        try:
            if isinstance(request, ScoreNext):
                return self._score(request)
            return self._generate(request)
        except _RequestFailed as e:
            return Response(error=str(e))

    def _body(self, prompt: Prompt, **extra) -> tuple[str, dict]:
        body = {"model": self.model, "temperature": 0.0, **extra}
        if isinstance(prompt, str):
            return "/completions", {**body, "prompt": prompt}
        body["messages"] = list(prompt)
        if prompt and prompt[-1]["role"] == "assistant":
            body.update(continue_final_message=True, add_generation_prompt=False)
        return "/chat/completions", body

    def _score(self, request: ScoreNext) -> Response:
        path, body = self._body(request.prompt, max_tokens=1)
        if path == "/completions":
            body["logprobs"] = self.top_logprobs
            if not request.add_special_tokens:
                body["add_special_tokens"] = False  # vLLM's extra parameter: no BOS
        else:
            body.update(logprobs=True, top_logprobs=self.top_logprobs)
        choice = self._post(path, body)["choices"][0]
        top = _top_logprobs(choice)
        if top is None:
            return Response(error=f"server returned no log-probs; does {self.base_url} support "
                                  "logprobs? use --method generation otherwise")
        found = {c: top.get(c) for c in request.candidates}
        if all(v is None for v in found.values()):
            return Response(error=f"no candidate among the top {self.top_logprobs} next tokens "
                                  f"({', '.join(list(top)[:5])}, …)")
        return Response(logprobs=found)

    def _generate(self, request: Generate) -> Response:
        path, body = self._body(request.prompt, max_tokens=request.max_tokens)
        if request.stop:
            body["stop"] = list(request.stop)
        choice = self._post(path, body)["choices"][0]
        text = choice.get("text")
        if text is None:
            text = (choice.get("message") or {}).get("content") or ""
        return Response(text=text)


class _RequestFailed(Exception):
    pass


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
