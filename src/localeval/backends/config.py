"""How a model is loaded and run: one typed, frozen config for every backend, validated once.

Each field carries its help text (the command line builds its flags from them). A backend takes
the fields its constructor names (``backends.registry``); a field set away from its default
for a backend that does not take it is one clear error before anything loads, never dropped.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..declared import Role, role_of
from ..errors import LocalevalError
from .secrets import redact_options, redact_value

MAX_TIMEOUT_S = 7 * 24 * 3600.0  # a week: asyncio cannot wait for ever, nor should a request
DEFAULT_BATCH_DEADLINE_H = 25.0  # the provider's 24 h window, and a margin for queues
# --top-logprobs: more than any model's vocabulary (Gemma 3's 262,144 is the largest we know;
# label_scores=full asks for a whole one), so a typo like 10**20 is refused, not sent
MAX_TOP_LOGPROBS = 1_000_000
DEFAULT_MAX_REPLY_MB = 64.0  # a top-20 log-prob reply is a few kB; an echoed long text, ~1 MB
DTYPES = ("auto", "float32", "bfloat16", "float16")
# what an OpenAI-compatible chat server is sent to continue an assistant prefill
CHAT_EXTENSIONS = ("vllm", "none")
# how a server scores multiple choice (backends/echo_scoring.py): the default first
SCORING: tuple[Literal["auto"], Literal["top-k"], Literal["echo"], Literal["ids"]] = (
    "auto", "top-k", "echo", "ids")
# Keys of --model-args that hold a credential (from_pretrained's token and its old names).
HUB_SECRETS = frozenset({"token", "use_auth_token", "hf_token", "api_key", "password"})
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
# the embedder of the dataset tools (an st: spec): here, so --help imports no backend for it
DEFAULT_EMBEDDER = "st:all-MiniLM-L6-v2"
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# The date a chat template prints (Llama 3.1/3.3: "Today Date: ..." from strftime_now("%d %b
# %Y") unless the caller passes date_string) is pinned per run, so a run resumed after midnight
# renders the prompts it began with. The default is the date those templates fall back to when
# they have no clock (their ``set date_string = "26 Jul 2024"``; copies without strftime_now
# always print it): fixed, so a rerun any day is the same run; the authors' run date is not
# recorded anywhere.
DEFAULT_TEMPLATE_DATE = "26 Jul 2024"
TEMPLATE_DATE_FORMAT = "%d %b %Y"


def is_template_date(text: str) -> bool:
    """Whether ``text`` is a date as the templates print it ("26 Jul 2024")."""
    try:
        datetime.datetime.strptime(text, TEMPLATE_DATE_FORMAT)
    except ValueError:
        return False
    return True


def flags(names: Iterable[str]) -> str:
    """Option names as the command line spells them: "--base-url, --top-logprobs"."""
    return ", ".join("--" + name.replace("_", "-") for name in names)


def _help(text: str, **cli: Any) -> Any:
    """A field's declaration: its help text, argparse keywords, and ours: ``secret`` /
    ``secret_keys`` (never recorded, :mod:`.secrets`), ``role`` (:data:`localeval.declared.Role`:
    ``speed`` changes how fast a run goes, never its numbers: kept out of the run's identity,
    so a rerun with another batch size still resumes; undeclared, a field is ``protocol``)."""
    return {"help": text, **cli}


@dataclass(frozen=True)
class BackendConfig:
    revision: str | None = field(default=None, metadata=_help(
        "model revision (Hub branch, tag or commit)"))
    model_args: dict[str, Any] | None = field(default=None, metadata=_help(
        "more model-loading options, as lm-eval takes them: e.g. "
        "trust_remote_code=true,low_cpu_mem_usage=true", metavar="KEY=VALUE,...",
        secret_keys=HUB_SECRETS))
    dtype: str = field(default="auto", metadata=_help(
        "auto (the checkpoint's on GPU, float32 on CPU), float32, bfloat16, float16"))
    device: str = field(default="auto", metadata=_help("auto, cpu, cuda, cuda:1, …"))
    batch_size: int | Literal["auto"] = field(default="auto", metadata=_help(
        "'auto' (fits memory) or an integer", role="speed"))
    attn: str = field(default="eager", metadata=_help(
        "attention implementation (eager keeps results identical across batch sizes; sdpa is "
        "faster on GPUs)"))
    padding_side: str = field(default="right", metadata=_help(
        "right or left (results are the same)", role="speed"))
    prefix_reuse: bool = field(default=True, metadata=_help(
        "turn prefix reuse off (it is on by default): forward every prompt whole, for "
        "comparison; results are the same",
        flag="--no-prefix-reuse", action="store_false", role="speed"))
    base_url: str | None = field(default=None, metadata=_help(
        "OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1; several, comma-separated, "
        "spread the load over replicas (default $OPENAI_BASE_URL)", secret="url"))
    api_key_env: str = field(default=DEFAULT_KEY_ENV, metadata=_help(
        "name of the environment variable holding the API key", role="speed"))
    concurrency: int = field(default=8, metadata=_help("requests in flight to a server",
                                                       type=int, role="speed"))
    rate_limit: float | None = field(default=None, metadata=_help(
        "at most this many requests started per second (default: no limit)", type=float,
        metavar="PER_SECOND", role="speed"))
    timeout: float = field(default=120.0, metadata=_help("seconds per request (server)",
                                                         type=float, role="speed"))
    max_retries: int = field(default=4, metadata=_help(
        "retries of a request on 408, 429, 5xx, timeouts, dropped connections and malformed "
        "replies (server)", type=int, role="speed"))
    max_reply_mb: float = field(default=DEFAULT_MAX_REPLY_MB, metadata=_help(
        "the largest reply read from a server, in MB; a longer one is a failed request "
        "(memory stays bounded at --concurrency such replies)", type=float, metavar="MB",
        role="speed"))
    top_logprobs: int = field(default=20, metadata=_help(
        "next-token log-probs asked of a server for likelihood scoring", type=int))
    scoring: str = field(default=SCORING[0], metadata=_help(
        "how a server scores multiple choice: top-k (the next token's top log-probs), echo "
        "(prompt + each option echoed, exact at any top-k cap; 1 + #options requests, on vLLM "
        "one and a /tokenize per prompt) "
        "or ids (each option's first token asked by id, one request a question, the server's "
        "prefix cache kept: vLLM's logprob_token_ids, proved by a probe) or auto (ids where "
        "the probe proves them, else top-k, and echo for a question whose reply lacks an "
        "option or whose top-k the server refuses); guards always read the top-k",
        choices=SCORING))
    batch: bool = field(default=False, metadata=_help(
        "send the run's requests to the server's Batch API (/v1/files, /v1/batches: half the "
        "price on api.openai.com) and wait for it; the batch ids are kept in the run folder "
        "(batches.json), so a killed run re-attaches, and a rerun submits only what is "
        "missing", action="store_true", role="speed"))
    batch_deadline: float = field(default=DEFAULT_BATCH_DEADLINE_H, metadata=_help(
        "hours --batch waits for a batch (polling it, with a line on stderr each time) before "
        "the run stops; the batch stays in batches.json and the same command re-attaches to it "
        "(default 25: the provider's 24 h window and a margin)", type=float, metavar="HOURS",
        role="speed"))
    tokenizer: str | None = field(default=None, metadata=_help(
        "the served model's tokenizer (Hub name or folder): a server's answer options are read "
        "by their first token (default: the server's own /tokenize, else the whole option "
        "text)"))
    chat_extensions: str | None = field(default=None, metadata=_help(
        "a chat prompt that ends with an assistant prefill is continued with vLLM's "
        "continue_final_message (vllm), or the server takes no such argument (none: "
        "api.openai.com refuses unknown arguments); default: vllm when the server's /models "
        "reports max_model_len, as vLLM's does, else none", choices=CHAT_EXTENSIONS))
    template_date: str | None = field(default=None, metadata=_help(
        "the date a chat template that prints today's date renders (Llama 3.1/3.3), as it "
        f"prints it, e.g. '{DEFAULT_TEMPLATE_DATE}' (the default: those templates' own "
        "fallback date), so that a run is the same run on any day; pinned on hf: and vllm: "
        "(date_string) and on a vLLM server (chat_template_kwargs); another chat server "
        "renders its own date, and the run records that it was not pinned",
        metavar="'DD Mon YYYY'"))

    def __post_init__(self) -> None:
        problem = self._problem()
        if problem:
            raise LocalevalError(problem)

    def _problem(self) -> str | None:
        if self.dtype not in DTYPES:
            return f"unknown --dtype {self.dtype!r}; use one of {', '.join(DTYPES)}"
        if self.batch_size != "auto" and (not isinstance(self.batch_size, int)
                                          or self.batch_size < 1):
            return f"--batch-size must be 'auto' or a positive integer, not {self.batch_size!r}"
        if self.padding_side not in ("right", "left"):
            return f"--padding-side must be right or left, not {self.padding_side!r}"
        for name in ("concurrency", "max_retries", "top_logprobs"):
            low = 0 if name == "max_retries" else 1
            if getattr(self, name) < low:
                return f"{flags([name])} must be at least {low}, not {getattr(self, name)}"
        if self.top_logprobs > MAX_TOP_LOGPROBS:
            return (f"--top-logprobs must be at most {MAX_TOP_LOGPROBS:,} (more than any "
                    f"model's vocabulary), not {self.top_logprobs}")
        if self.scoring not in SCORING:
            return f"--scoring must be one of {', '.join(SCORING)}, not {self.scoring!r}"
        if self.chat_extensions not in (None, *CHAT_EXTENSIONS):
            return (f"--chat-extensions must be one of {', '.join(CHAT_EXTENSIONS)}, not "
                    f"{self.chat_extensions!r}")
        return self._key_env_problem() or self._seconds_problem() or self._date_problem()

    def _date_problem(self) -> str | None:
        """--template-date is a date written as the templates print it ("26 Jul 2024")."""
        if self.template_date is None or is_template_date(self.template_date):
            return None
        return (f"--template-date must be a date written as chat templates print it, e.g. "
                f"'{DEFAULT_TEMPLATE_DATE}', not {self.template_date!r}")

    def _key_env_problem(self) -> str | None:
        """--api-key-env names a variable that is set; a key given in its place (it would be
        recorded with the command line) is refused without being repeated."""
        name = self.api_key_env
        if name == DEFAULT_KEY_ENV or (ENV_NAME.fullmatch(name) and name in os.environ):
            return None
        return ("--api-key-env takes the NAME of the environment variable that holds the key "
                "(e.g. OPENAI_API_KEY), not the key itself; what was given names no variable "
                "that is set (it is not repeated here, in case it is a key)")

    def _seconds_problem(self) -> str | None:
        """Float options: finite and in range (argparse's float() takes "nan" and "inf")."""
        if not 0 < self.timeout <= MAX_TIMEOUT_S:  # also false for NaN
            return (f"--timeout must be a number of seconds in (0, {MAX_TIMEOUT_S:g}], not "
                    f"{self.timeout!r}")
        if self.rate_limit is not None and not 0 < self.rate_limit < math.inf:
            return f"--rate-limit must be a positive number per second, not {self.rate_limit!r}"
        if not 0 < self.max_reply_mb < math.inf:
            return f"--max-reply-mb must be a positive number of MB, not {self.max_reply_mb!r}"
        if not 0 < self.batch_deadline < math.inf:
            return ("--batch-deadline must be a positive number of hours, not "
                    f"{self.batch_deadline!r}")
        return None

    @classmethod
    def of(cls, value: BackendConfig | Mapping[str, Any] | None) -> BackendConfig:
        """A config from a config, a dict of its fields (None: the default), or None."""
        if isinstance(value, BackendConfig):
            return value
        given = {k: v for k, v in (value or {}).items() if v is not None}
        unknown = sorted(set(given) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise LocalevalError(f"unknown backend option(s) {', '.join(unknown)}; they are: "
                                 + ", ".join(f.name for f in dataclasses.fields(cls)))
        return cls(**given)

    def changed(self) -> dict[str, Any]:
        """The fields set away from their defaults."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) != f.default}

    @classmethod
    def secret_keys(cls) -> frozenset[str]:
        """Every key declared secret in a dict option (``secret_keys`` metadata)."""
        return frozenset().union(*(f.metadata.get("secret_keys", ()) for f in
                                   dataclasses.fields(cls)))

    @classmethod
    def of_role(cls, role: Role) -> frozenset[str]:
        """The fields of ``role``: those of the ``speed`` role are left out of the run's
        identity."""
        return frozenset(f.name for f in dataclasses.fields(cls) if role_of(f) == role)

    @classmethod
    def redacted(cls, options: dict[str, Any]) -> dict[str, Any]:
        """Options by field name as they may be recorded: each field declared secret
        (``secret="url"``: each comma-separated URL; ``secret_keys``: those keys of a dict)
        redacted (:mod:`.secrets`)."""
        meta: dict[str, Mapping[str, Any]] = {f.name: f.metadata
                                              for f in dataclasses.fields(cls)}
        out = {}
        for name, value in options.items():
            declared = meta.get(name, {})
            if declared.get("secret") == "url" and isinstance(value, str):
                value = redact_value(value, frozenset())
            elif declared.get("secret_keys") and isinstance(value, dict):
                value = redact_options(value, frozenset(declared["secret_keys"]))
            out[name] = value
        return out

    def settings(self) -> dict[str, Any]:
        """The fields that can change a number (a run folder's settings). An unset
        ``tokenizer`` is left out, so run folders named before it existed keep their names."""
        out = self.redacted({k: v for k, v in dataclasses.asdict(self).items()
                             if k not in self.of_role("speed")})
        for late in ("tokenizer", "chat_extensions", "template_date"):  # added later: unset keeps the names
            if out.get(late) is None:
                out.pop(late, None)
        return out
