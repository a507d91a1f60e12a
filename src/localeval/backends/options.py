"""Each backend kind's own options, declared where the command line can read them without
importing any backend (``localeval run --help`` imports none; :mod:`.registry` checks a run's
options against them before any backend loads).

Every option is declared once, as a :class:`~.config.BackendConfig` field (its type, default,
help text and run-spec role: ``protocol``, ``speed``, :data:`localeval.declared.Role`); the
flags and ``--role-option ROLE.KEY`` keys are that one flat set, as inspect_ai has one generation
config beside each provider's own ``model_args``. A backend kind declares which of them it takes
as its own frozen dataclass (:func:`options_of`: ``OpenAIOptions``, ``HFOptions``, …), whose
fields are those declarations, so a role or a default is never written twice. A plugin's
backend may declare its own the same way (an ``Options`` class attribute); one that does not
takes the fields its constructor names, as before.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from ..declared import Role, role_of
from .config import BackendConfig

_CONFIG = {f.name: f for f in dataclasses.fields(BackendConfig)}


class BackendOptions:
    """The base of a backend kind's options (a frozen dataclass of :class:`BackendConfig`
    fields, made by :func:`options_of`)."""

    kind: ClassVar[str] = ""

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]

    @classmethod
    def of_role(cls, role: Role) -> frozenset[str]:
        """The options of ``role`` (``speed``: kept out of the run's identity)."""
        return frozenset(f.name for f in dataclasses.fields(cls)  # type: ignore[arg-type]
                         if role_of(f) == role)

    @classmethod
    def of(cls, config: BackendConfig) -> BackendOptions:
        """This kind's options as ``config`` sets them."""
        return cls(**{name: getattr(config, name) for name in cls.names()})

    def kwargs(self) -> dict[str, Any]:
        """What the backend's constructor is given: each option that is set (None: the
        backend's own default)."""
        return {name: value for name in self.names()
                if (value := getattr(self, name)) is not None}


def options_of(kind: str, *names: str) -> type[BackendOptions]:
    """The options class of backend ``kind``: a frozen dataclass whose fields are the
    :class:`BackendConfig` fields ``names`` (their types, defaults, help and roles)."""
    unknown = [n for n in names if n not in _CONFIG]
    if unknown:
        raise ValueError(f"backend {kind}: no backend option {', '.join(unknown)}")
    fields = [(n, _CONFIG[n].type, dataclasses.field(
        default=_CONFIG[n].default, metadata=_CONFIG[n].metadata)) for n in names]
    title = "".join(part.capitalize() for part in kind.replace("-", " ").split())
    cls = dataclasses.make_dataclass(f"{title}Options", fields, bases=(BackendOptions,),
                                     frozen=True, namespace={"kind": kind})
    cls.__module__ = __name__
    return cls


# an HTTP server's client: where it is, its key, and how requests go (all speed but the URL)
SERVER = ("base_url", "api_key_env", "concurrency", "timeout", "max_retries", "rate_limit",
          "max_reply_mb")

HFOptions = options_of("hf", "revision", "model_args", "dtype", "device", "batch_size", "attn",
                       "padding_side", "prefix_reuse", "template_date")
OpenAIOptions = options_of("openai", *SERVER, "top_logprobs", "tokenizer", "chat_extensions",
                           "scoring", "batch", "batch_deadline", "template_date")
VllmOptions = options_of("vllm", "revision", "dtype", "model_args", "template_date")
HFSeq2SeqOptions = options_of("hf-seq2seq", "revision", "device")
SentenceEmbeddingOptions = options_of("st", "device", "batch_size")
OpenAIEmbedOptions = options_of("openai-embed", *SERVER)
ModerationOptions = options_of("moderation", "concurrency", "timeout", "max_retries",
                               "rate_limit", "max_reply_mb")
NoModelOptions = options_of("none")

# the built-in kinds' declarations, by kind (registry.BACKENDS names the same kinds)
DECLARED: Mapping[str, type[BackendOptions]] = {
    o.kind: o for o in (HFOptions, OpenAIOptions, VllmOptions, HFSeq2SeqOptions,
                        SentenceEmbeddingOptions, OpenAIEmbedOptions, ModerationOptions,
                        NoModelOptions)}


def kinds_taking(name: str) -> list[str]:
    """The built-in backend kinds that take option ``name`` (for --help)."""
    return [kind for kind, options in DECLARED.items() if name in options.names()]
