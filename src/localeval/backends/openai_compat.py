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

The backend is a composition of one part per concern, sharing one :class:`.openai_server.Server`
(the served model, its replicas, the client and the Batch API poster): request bodies and chat
extensions (:mod:`.openai_bodies`); reply reading (:mod:`.openai_reading`, :mod:`.replies`);
echo, its probe and its scoring (:mod:`.openai_echo`, :mod:`.echo_scoring`); reading by token id
(:mod:`.openai_ids`, :mod:`.id_scoring`); the first-label (ranked) reading and its second read
(:mod:`.openai_ranked`, :mod:`.ranked_reading`); metering and cost bounds
(:mod:`.openai_metering`, :mod:`.usage`); batch (:mod:`.openai_batch`). This module decides
what goes where: which request is read how, in which order, on which replica. (Over 300 lines
because this docstring is the backend's behaviour in one place; the code is the routing.)

httpx rather than the ``openai`` SDK: the SDK has no completions ``echo``/vLLM extra fields
without workarounds, hides the raw body we need for truncation checks, and retries on its own
terms; httpx gives async connection pools and leaves the retry policy to us.
"""

from __future__ import annotations

import json
import os
from collections import ChainMap
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import Any

from ..errors import LocalevalError
from .api_access import ApiBackend, bearer, check_base_url, openai_urls
from .async_http import Call, public_url
from .base import (
    Embed,
    Failed,
    Generate,
    Moderate,
    Progress,
    Prompt,
    Request,
    Response,
    ScoreNext,
    TextLogprobs,
)
from .config import (
    DEFAULT_BATCH_DEADLINE_H,
    DEFAULT_MAX_REPLY_MB,
    DEFAULT_TEMPLATE_DATE,
    BackendConfig,
)
from .echo_scoring import AUTO, IDS, TOP_K, llama_cpp_without_bos, needs_echo
from .failures import ErrorReply, Unsupported
from .id_scoring import PROVED
from .label_tokens import LabelTokenError, WholeText, label_tokens
from .openai_batch import BatchPoster
from .openai_bodies import (  # noqa: F401 — their old home: importable from here too
    AFTER_TEMPLATE_REFUSED,
    CHAT,
    COMPLETIONS,
    OWN_TEMPLATE_REFUSED,
    PREFILL_REFUSED,
    UNPINNED,
    Bodies,
    NoPrefill,
    text_logprobs_body,
)
from .openai_echo import EchoScorer, echoed_at_once
from .openai_ids import IdReader
from .openai_metering import Meter
from .openai_ranked import WholeRead
from .openai_reading import (  # noqa: F401 — NO_LOGPROBS: its old home
    NO_LOGPROBS,
    counted,
    echoed_logprobs,
    keeping,
    noting_tokens,
    read_choice,
    refused_alike,
    sent,
    top_k_kept,
    valid,
)
from .openai_server import Server, served_models  # noqa: F401 — served_models: its old home
from .options import OpenAIOptions
from .replies import only_choice
from .secrets import query_digest
from .usage import Tokens

REPLICA_BLOCK = 8  # consecutive (prefix-sorted) requests sent to one replica
BATCH_CHUNK = 50_000  # requests per backend call with --batch: the Batch API's most per batch

Names = dict[int, dict[str, str] | LabelTokenError]


class OpenAIBackend(ApiBackend):
    Options = OpenAIOptions  # the options it takes (.options: --help reads them there)

    @classmethod
    def preflight(cls, target: str, config: BackendConfig) -> None:
        check_base_url(cls, target, config)

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
        key = os.environ.get(api_key_env, "")
        self.connect(key, self.base_urls, bearer(key), timeout=timeout, max_retries=max_retries,
                     concurrency=concurrency, rate_limit=rate_limit, max_reply_mb=max_reply_mb)
        self.counts = {"requests": 0, "failed": 0}
        # --batch: the Batch API instead of one request each (not in the identity: the same
        # numbers); executor.py hands it all of a run's requests at once
        batches = BatchPoster(httpx, self.base_urls[0], self.headers, self.scrub, max_retries,
                              timeout, self.client.max_reply_bytes, batch_deadline) \
            if batch else None
        self.chunk = BATCH_CHUNK if batch else None
        self.server = Server(httpx, model, self.base_urls, self.client, self.headers,
                             self.scrub, timeout, top_logprobs, batches)
        # the timing record's counters, read live: requests and failures, the client's HTTP
        # calls and retries, and the batches' (a later map's key wins, as a dict merge would)
        self.stats = ChainMap(*([batches.stats] if batches else []), self.client.stats,
                              self.counts)
        self.chat_extensions = self._reach(chat_extensions)
        # decided now, not at the first ScoreNext: the identity (cache key, config.json) says it
        self.server.labels = label_tokens(tokenizer, self.server.post_each, self.server.root,
                                          model)
        self.identity = self._identity()
        self.template_date = self._pinned_date(template_date)
        self.bodies = Bodies(model, top_logprobs, self.labels.token_ids, self.chat_extensions,
                             self.template_date)
        self.echo = EchoScorer(self.server)
        self.ids = IdReader(self.server)
        self.second = WholeRead(self.server, self.bodies, self.ids)
        self.meter = Meter(self.server, self.bodies, scoring)
        self._decide_by_id(batch)

    # ---------------------------------------------------------------- setup
    def _reach(self, chat_extensions: str | None) -> str:
        """Each replica asked for the model (its context length kept); the chat extensions it
        takes: as given, else vLLM's where ``/models`` reports ``max_model_len``, as vLLM's does
        (api.openai.com's does not, and refuses vLLM's chat arguments)."""
        infos = [self.server.model_info(u, self.api_key_env) for u in self.base_urls]
        self.server.context = min((i.get("max_model_len") or 0 for i in infos),
                                  default=0) or None
        return chat_extensions or (
            "vllm" if infos and all(i.get("max_model_len") for i in infos) else "none")

    def _identity(self) -> dict[str, Any]:
        """What the cache key and config.json say of this backend (never a password)."""
        shown = [public_url(u) for u in self.base_urls]
        return {"backend": "openai", "model": self.model,
                "base_url": shown[0] if len(shown) == 1 else shown,
                **query_digest(self.base_urls),
                "top_logprobs": self.top_logprobs, "label_tokens": self.labels.source,
                "chat_extensions": self.chat_extensions, "scoring": self.scoring}

    def _pinned_date(self, template_date: str | None) -> str:
        """The date a chat template prints: vLLM takes it (chat_template_kwargs), as the hf:
        and vllm: backends pass it; another server renders its own, and the record says so."""
        if self.chat_extensions != "vllm" and template_date is not None:
            raise LocalevalError(f"--template-date: {public_url(self.base_url)} is not known "
                                 "to take vLLM's chat_template_kwargs, so the date its chat "
                                 "template prints cannot be pinned; pass --chat-extensions "
                                 "vllm if it does")
        self.identity["template_date"] = (template_date or DEFAULT_TEMPLATE_DATE) \
            if self.chat_extensions == "vllm" else UNPINNED
        return template_date or DEFAULT_TEMPLATE_DATE

    def _decide_by_id(self, batch: bool) -> None:
        """Multiple choice by token id (:mod:`.openai_ids`), where a probe proves the server
        reads them; in the identity (so the cache key) only then: a server without them keeps
        its identity and cache keys. --scoring ids where it cannot is one line."""
        problem = None
        if self.scoring in (AUTO, IDS) and self.labels.token_ids and not batch:
            problem = self.ids.problem()
            self.server.by_id = problem is None
            if self.by_id:
                self.identity["logprob_token_ids"] = PROVED
        elif self.scoring == IDS:
            problem = ("--batch sends one prompt a request through the Batch API" if batch
                       else "the server has no /tokenize answering with token ids")
        if self.scoring == IDS and not self.by_id:
            raise LocalevalError(f"--scoring ids: {public_url(self.base_url)} cannot be read "
                                 f"by token id ({problem}); use --scoring auto")

    @property
    def base_url(self) -> str:
        return self.base_urls[0]

    @property
    def labels(self) -> WholeText:
        """How the server's top log-probs name an answer option (:mod:`.label_tokens`)."""
        return self.server.labels

    @property
    def by_id(self) -> bool:
        """Whether a probe proved the server reads log-probs by token id."""
        return self.server.by_id

    @property
    def batches(self) -> BatchPoster | None:
        return self.server.batches

    def keep_batches(self, ledger: Any) -> None:
        """Where --batch keeps its batch ids (the run folder's batches.json): a killed run
        re-attaches. Without one, they are kept in memory."""
        if self.batches:
            ledger.load()  # a damaged batches.json is one line now, not when a batch is due
            self.batches.ledger = ledger

    def _echo_refused(self, requests: Iterable[ScoreNext]) -> str | None:
        """Why multiple choice cannot be echoed on this server (the probe), or None: its name
        before the split (:meth:`.openai_echo.EchoScorer.refused`)."""
        return self.echo.refused(requests)

    # ---------------------------------------------------------------- protocol
    def max_context(self) -> int | None:
        return self.server.context

    def count_tokens(self, prompt: Prompt, add_special_tokens: bool = True) -> int | None:
        """With --tokenizer, else via vLLM's /tokenize (:mod:`.openai_metering`)."""
        return self.meter.count_tokens(prompt, add_special_tokens)

    def cost_bound(self, request: Request) -> tuple[int, int]:
        """At most how many (prompt, completion) tokens ``request`` may be billed
        (:meth:`.openai_metering.Meter.cost_bound`)."""
        return self.meter.cost_bound(request)

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
        report, meter = self.meter.metering(requests, progress)
        out = [meter(i, r) for i, r in enumerate(self._scored(requests, urls, order, report))]
        self.counts["requests"] += len(requests)
        self.counts["failed"] += sum(1 for r in out if isinstance(r, Failed))
        refused_alike([r for q, r in zip(requests, out, strict=True) if isinstance(q, ScoreNext)],
                      self.base_url, self.model, self.top_logprobs)
        return out

    # ---------------------------------------------------------------- what goes where
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
        later = echoed_at_once(requests, names, mode) - by_id

        def report(i: int, response: Response) -> None:
            if progress and not needs_echo(requests[i], response, mode) \
                    and not self.second.needed(requests[i], response):
                progress(i, response)

        paid: dict[int, Tokens] = {}  # the usage of each multiple-choice top-k reply
        greedy: dict[int, list[str] | None] = {}  # each whole-vocabulary first read's tokens
        # every by-id read answered before any top-k one is sent (:mod:`.id_scoring`)
        read = self.ids.read(requests, [i for i in order if i in by_id], urls, progress)
        out = self._send(requests, urls, order, names, report, later | by_id, paid, greedy)
        out = [read.get(i, r) for i, r in enumerate(out)]
        out = self.second.read(requests, out, urls, names, progress, greedy)
        redo = later | {i for i, r in enumerate(out)
                        if r is not None and needs_echo(requests[i], r, mode)}
        redo = self._unproven_kept(requests, out, redo, names, mode, progress)
        rank = {i: k for k, i in enumerate(order)}
        echoed = self.echo.run(requests, sorted(redo, key=lambda i: rank[i]), urls, progress,
                               paid)
        return [echoed[i] if i in echoed else sent(r) for i, r in enumerate(out)]

    def _unproven_kept(self, requests: Sequence[Request], out: list[Response | None],
                       redo: set[int], names: Names, mode: str,
                       progress: Progress | None) -> set[int]:
        """What is left to echo: ``redo``, or nothing in auto where the probe cannot tell
        whether this server's echo reads right (one that ignores echo): then the top-k answers
        in ``out`` stand, marked so (issue 63 item 4)."""
        if mode != AUTO or not redo or not self.echo.unproven([requests[i] for i in redo]):
            return redo
        for i in redo:
            out[i] = kept = top_k_kept(out[i], names.get(i))
            if progress:
                progress(i, kept)
        return set()

    def _read_by_id(self, request: Request) -> bool:
        """Whether ``request`` is read by token id: multiple choice (``ScoreNext.echo``) on a
        plain prompt, on a server the probe proved. --scoring ids fails a chat one
        (:meth:`.openai_ids.IdReader.read`); guards keep their authors' top-k."""
        return self.by_id and isinstance(request, ScoreNext) and request.echo \
            and (isinstance(request.prompt, str) or self.scoring == IDS)

    def _label_names(self, requests: Sequence[Request]) -> Names:
        """Each ScoreNext's candidates as the server's top log-probs name them (their first
        tokens, :mod:`.label_tokens`), or why the request cannot be read at one position."""
        scores = {i: r for i, r in enumerate(requests) if isinstance(r, ScoreNext)}
        self.labels.prepare(c for r in scores.values() for c in r.candidates)
        out: Names = {}
        for i, r in scores.items():
            try:
                out[i] = self.labels.names(r.candidates)
            except LabelTokenError as e:
                out[i] = e
        return out

    def _send(self, requests: Sequence[Request], urls: list[str], order: list[int],
              names: Names, progress: Progress | None,
              later: AbstractSet[int] = frozenset(),
              paid: dict[int, Tokens] | None = None,
              greedy: dict[int, list[str] | None] | None = None) -> list[Response | None]:
        """Every request that can run, posted in ``order``; one that cannot (its ``names`` is
        the reason) fails alone, as on the hf backend. Those in ``later`` are left None. The
        usage of each multiple-choice reply goes in ``paid`` too: ``auto`` may redo it in echo,
        and what it cost counts there; the generated tokens of each whole-vocabulary reply in
        ``greedy``: a second read must have written the same."""
        out: list[Response | None] = [None] * len(requests)
        sent_: list[int] = []
        calls: list[Call[Response]] = []
        for i, request in enumerate(requests):
            if i in later:
                continue
            made = self._made(i, request, urls[i], names.get(i))
            if isinstance(made, Failed):
                out[i] = made
                if progress:
                    progress(i, made)
                continue
            calls.append(self._noted(made, i, request, paid, greedy))
            sent_.append(i)
        rank = {i: k for k, i in enumerate(sent_)}

        def report(k: int, response: Response) -> None:
            if progress is not None:
                progress(sent_[k], response)

        replies = self.server.post(calls, report, [rank[i] for i in order if i in rank])
        for i, response in zip(sent_, replies, strict=True):
            out[i] = response
        return out

    def _made(self, i: int, request: Request, url: str,
              named: dict[str, str] | LabelTokenError | None) -> Call[Response] | Failed:
        """Request ``i``'s call on replica ``url``, or why it cannot be sent."""
        problem: LabelTokenError | NoPrefill | Unsupported
        if isinstance(request, TextLogprobs) and \
                (misread := self.echo.misread(request.text, True)):
            problem = Unsupported(f"{misread}: Min-k% Prob needs a server whose echo reads "
                                  "them right, or the model on hf:")
        elif isinstance(named, LabelTokenError):
            problem = named
        else:
            try:
                return self._call(url, request, named)
            except NoPrefill as e:
                problem = e
        # a /tokenize that failed may pass on a rerun; the rest fail the same way
        transient = isinstance(problem, LabelTokenError) and not problem.permanent
        return Failed(ErrorReply(str(problem)) if transient else Unsupported(str(problem)))

    def _noted(self, call: Call[Response], i: int, request: Request,
               paid: dict[int, Tokens] | None,
               greedy: dict[int, list[str] | None] | None) -> Call[Response]:
        """``call``, keeping what a later step needs of its reply: a multiple-choice reply's
        usage in ``paid``, a whole-vocabulary reply's generated tokens in ``greedy``."""
        if not isinstance(request, ScoreNext):
            return call
        if paid is not None and request.echo:
            call = replace(call, parse=keeping(call.parse, paid, i, self.server.context))
        if greedy is not None and request.whole_vocabulary:
            call = replace(call, parse=noting_tokens(call.parse, greedy, i))
        return call

    def _call(self, url: str, request: Request,
              names: dict[str, str] | None = None) -> Call[Response]:
        server = self.server
        if isinstance(request, TextLogprobs):
            return server.call(url, COMPLETIONS, text_logprobs_body(self.model, request),
                               lambda reply: valid(request, echoed_logprobs(reply,
                                                                            server.context)))
        path, body = self.bodies.request(request)
        chat = path == CHAT

        def parse(reply: Any) -> Response:
            read = read_choice(request, only_choice(reply), chat, self.top_logprobs,
                               self.base_url, names)
            return valid(request, counted(read, reply, server.context))
        return server.call(url, path, body, parse,
                           draw=request.sample if isinstance(request, Generate) else None)


def _sort_key(request: Request) -> str:
    if isinstance(request, TextLogprobs | Embed | Moderate):
        return request.text
    return _prompt_key(request.prompt)


def _prompt_key(prompt: Prompt) -> str:
    return prompt if isinstance(prompt, str) else json.dumps(prompt, ensure_ascii=False)
