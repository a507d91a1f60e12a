"""Backend specs (``kind:target``) and the table of backend kinds.

Kept apart from :mod:`.base` so the protocol module imports no backend: each backend imports
``base``, and only this registry imports the backends (lazily, so ``openai:`` never loads torch).
"""

from __future__ import annotations

import importlib
import inspect

from ..errors import LocalevalError
from .base import Backend

# kind -> (module under localeval.backends, class name)
BACKENDS: dict[str, tuple[str, str]] = {
    "hf": ("hf", "HFBackend"),
    "openai": ("openai_compat", "OpenAIBackend"),
    "hf-seq2seq": ("hf_seq2seq", "HFSeq2SeqBackend"),  # translation (X-Guard's first step)
    "st": ("embedding", "SentenceEmbeddingBackend"),  # sentence-transformers embedders
    "moderation": ("moderation", "ModerationBackend"),  # moderation APIs (their guards' own)
}


def parse_backend_spec(spec: str) -> tuple[str, str]:
    """``hf:Qwen/Qwen2.5-7B-Instruct`` -> ("hf", "Qwen/Qwen2.5-7B-Instruct"), or a clear error."""
    kind, sep, target = spec.partition(":")
    if not sep or not target:
        raise LocalevalError(f"model {spec!r} needs a backend prefix, e.g. hf:Qwen/Qwen2.5-0.5B, "
                             "hf:/path/to/model or openai:<served model name>")
    if kind not in BACKENDS:
        raise LocalevalError(f"unknown backend {kind!r} in {spec!r}; available: "
                             f"{', '.join(BACKENDS)}")
    return kind, target


def preflight(spec: str, **options) -> None:
    """Cheap checks of ``spec`` before any data or model loads (see :mod:`.hub`)."""
    kind, target = parse_backend_spec(spec)
    if kind == "st":
        from .embedding import PACKAGED

        if target.removeprefix("sentence-transformers/") in PACKAGED:
            return
    if kind in ("hf", "hf-seq2seq", "st"):
        from .hub import check_model_source

        check_model_source(target, options.get("revision"))


def load_backend(spec: str, **options) -> Backend:
    """Make a backend from ``kind:target``, e.g. ``hf:Qwen/Qwen2.5-7B-Instruct`` or ``hf:/models/x``.

    Every option is offered to every backend (the CLI passes them all); each takes the ones its
    constructor has, and ``None`` means "the backend's default".
    """
    kind, target = parse_backend_spec(spec)
    module, name = BACKENDS[kind]
    cls = getattr(importlib.import_module(f"{__package__}.{module}"), name)
    accepted = inspect.signature(cls).parameters
    return cls(target, **{k: v for k, v in options.items() if k in accepted and v is not None})
