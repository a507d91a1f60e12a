"""Backend specs (``kind:target``) and the table of backend kinds.

Kept apart from :mod:`.base` so the protocol module imports no backend: each backend imports
``base``, and only this registry imports the backends (lazily, so ``openai:`` never loads torch).
Other packages add backend kinds through the ``localeval.backends`` entry point
(:mod:`..plugins`): ``--model mykind:target``.

Which options a kind takes is its declaration (:mod:`.options`), read without importing the
backend; a plugin's backend declares them as an ``Options`` class attribute, or takes the
:class:`BackendConfig` fields its constructor names.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import cast

from ..errors import LocalevalError
from ..plugins import Part, table
from .base import Backend
from .config import BackendConfig, flags
from .options import DECLARED, BackendOptions

# kind -> "module:class"
BACKENDS: dict[str, str] = {
    "hf": "localeval.backends.hf:HFBackend",
    "openai": "localeval.backends.openai_compat:OpenAIBackend",
    # vLLM's engine in this process (GPUs, several)
    "vllm": "localeval.backends.vllm_engine:VllmBackend",
    # translation (X-Guard's first step)
    "hf-seq2seq": "localeval.backends.hf_seq2seq:HFSeq2SeqBackend",
    "st": "localeval.backends.embedding:SentenceEmbeddingBackend",  # sentence-transformers
    # /v1/embeddings (LionGuard 2)
    "openai-embed": "localeval.backends.openai_embed:OpenAIEmbeddingBackend",
    # moderation APIs (their guards' own)
    "moderation": "localeval.backends.moderation:ModerationBackend",
    # no model: a guard that classifies without one (model = "none:<its name>")
    "none": "localeval.backends.none:NoModel",
}


def backend_table() -> dict[str, Part]:
    """Every backend kind: the built-in ones, then other packages' (not imported)."""
    return table("localeval.backends", BACKENDS)


def parse_backend_spec(spec: str) -> tuple[str, str]:
    """``hf:Qwen/Qwen2.5-7B-Instruct`` -> ("hf", "Qwen/Qwen2.5-7B-Instruct"), or a clear error."""
    kind, sep, target = spec.partition(":")
    if not sep or not target:
        raise LocalevalError(f"model {spec!r} needs a backend prefix, e.g. hf:Qwen/Qwen2.5-0.5B, "
                             "hf:/path/to/model or openai:<served model name>")
    kinds = backend_table()
    if kind not in kinds:
        raise LocalevalError(f"unknown backend {kind!r} in {spec!r}; available: "
                             f"{', '.join(kinds)}")
    return kind, target


def backend_class(spec: str) -> type[Backend]:
    """The class of ``kind:target``'s backend (its module imports nothing heavy at import)."""
    kind, _ = parse_backend_spec(spec)
    part = backend_table()[kind]
    found = part.load()
    if not (isinstance(found, type) and issubclass(found, Backend)):
        raise LocalevalError(f"backend {kind!r} ({part.target}, from {part.origin}) is not a "
                             "localeval.backends.base.Backend subclass")
    return found


def options_class(spec: str) -> type[BackendOptions] | None:
    """The options ``spec``'s backend kind declares: a built-in kind's from :mod:`.options`
    (no backend imported), a plugin's from its ``Options`` attribute; None where it declares
    none."""
    kind, _ = parse_backend_spec(spec)
    part = backend_table()[kind]
    if part.built_in and kind in DECLARED:
        return DECLARED[kind]
    declared = getattr(backend_class(spec), "Options", None)
    return declared if isinstance(declared, type) and issubclass(declared, BackendOptions) \
        else None


def taken_options(spec: str) -> list[str]:
    """The :class:`BackendConfig` fields the backend of ``spec`` takes: those its kind
    declares, else its constructor's parameters."""
    declared = options_class(spec)
    accepted = declared.names() if declared is not None \
        else inspect.signature(backend_class(spec)).parameters
    return [f.name for f in dataclasses.fields(BackendConfig) if f.name in accepted]


def check_options(spec: str, config: BackendConfig, role: str = "the model") -> None:
    """A config field set for a backend that does not take it is one clear error."""
    taken = taken_options(spec)
    stray = [name for name in config.changed() if name not in taken]
    if stray:
        raise LocalevalError(f"{flags(stray)}: not an option of the {parse_backend_spec(spec)[0]} "
                             f"backend of {role} ({spec}); it takes: "
                             f"{', '.join(taken) or 'none'}")


def preflight(spec: str, config: BackendConfig | None = None, role: str = "the model") -> None:
    """Cheap checks of ``spec`` and its options before any data or model loads (see
    :mod:`.hub`)."""
    config = config or BackendConfig()
    _, target = parse_backend_spec(spec)
    check_options(spec, config, role)
    backend_class(spec).preflight(target, config)  # each kind declares its own checks


def load_backend(spec: str, config: BackendConfig | None = None) -> Backend:
    """Make a backend from ``kind:target``, e.g. ``hf:Qwen/Qwen2.5-7B-Instruct`` or
    ``hf:/models/x``, with the fields of ``config`` its constructor takes (None values mean
    "the backend's default")."""
    config = config or BackendConfig()
    _, target = parse_backend_spec(spec)
    # each backend's constructor takes its target and the config fields it names
    make = cast(Callable[..., Backend], backend_class(spec))  # a backend kind's constructor
    taken = {name: getattr(config, name) for name in taken_options(spec)}
    return make(target, **{k: v for k, v in taken.items() if v is not None})
