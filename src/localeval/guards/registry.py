"""The table of guards: ``--guard NAME`` -> the adapter class, imported only when asked for."""

from __future__ import annotations

import importlib
import inspect

from ..declared import parse_if_text
from ..errors import LocalevalError
from .base import Guard
from .staged import StagedGuard

# name -> (module under localeval.guards, class name)
GUARDS: dict[str, tuple[str, str]] = {
    "zero-shot": ("zero_shot", "ZeroShotGuard"),
    "zero-shot-verdict": ("zero_shot_verdict", "VerdictZeroShotGuard"),
    "llamaguard3": ("llamaguard", "LlamaGuard3"),
    "llamaguard4": ("llamaguard", "LlamaGuard4"),
    "shieldgemma": ("shieldgemma", "ShieldGemma"),
    "qwen3guard": ("qwen3guard", "Qwen3Guard"),
    "polyguard": ("polyguard", "PolyGuard"),
    "wildguard": ("wildguard", "WildGuard"),
    "xguard": ("xguard", "XGuard"),
    "sealion-guard": ("sealionguard", "SealionGuard"),
    "lionguard2": ("lionguard2", "LionGuard2"),  # its head on an openai-embed: embedder
    # moderation APIs: keys and endpoints from environment variables (guards/moderation.py)
    "openai-moderation": ("moderation", "OpenAIModeration"),
    "azure-content-safety": ("moderation", "AzureContentSafety"),
    "model-armor": ("moderation", "ModelArmor"),
    "lakera-guard": ("moderation", "LakeraGuard"),
}


def available_guards() -> list[str]:
    return sorted(GUARDS)


def get_guard(name: str, **options) -> Guard:
    """Make the guard registered as ``name`` (e.g. ``llamaguard3``) with its own options;
    ``embedding:<file>`` is a trained embedding guard."""
    kind, sep, path = name.partition(":")
    if sep and kind.strip().lower() == "embedding":
        from .embedding import EmbeddingGuard

        if options:
            raise LocalevalError(f"an embedding guard takes no options (got {', '.join(options)})")
        guard = EmbeddingGuard(path)
        guard.options = {"path": path}
        return guard
    key = name.strip().lower().replace("_", "-")
    if key not in GUARDS:
        raise LocalevalError(f"unknown guard {name!r}; available: {', '.join(available_guards())}, "
                             "embedding:<guard file>")
    module, cls_name = GUARDS[key]
    cls = getattr(importlib.import_module(f"{__package__}.{module}"), cls_name)
    options = _declared_options(cls, key, dict(options))
    label_scores = options.pop("label_scores", None)  # every guard on a language model's
    guard = cls(**options)
    if label_scores is not None:
        guard.set_label_scores(label_scores)
    guard.options = {**options, **({"label_scores": label_scores} if label_scores else {})}
    return guard


def _declared_options(cls: type, key: str, options: dict) -> dict:
    """The guard's options, each one it does not have a one-line error, each text from the
    command line (--guard-option reasoning=true) parsed by the type its parameter declares."""
    parameters = {n: p for n, p in inspect.signature(cls).parameters.items() if n != "self"}
    staged = ["label_scores"] if issubclass(cls, StagedGuard) else []
    if "label_scores" in options and not staged:
        raise LocalevalError(f"guard {key!r} reads no label log-probs: label_scores is an "
                             "option of the guards on a language model")
    unknown = sorted(set(options) - set(parameters) - set(staged))
    if unknown:
        raise LocalevalError(f"guard {key!r} has no option(s) {', '.join(unknown)}; it accepts: "
                             f"{', '.join([*parameters, *staged]) or 'no options'}")
    return {k: v if k not in parameters or parameters[k].annotation is inspect.Parameter.empty
            else parse_if_text(parameters[k].annotation, v, f"guard option {k}")
            for k, v in options.items()}
