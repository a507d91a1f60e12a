"""The table of guards: ``--guard NAME`` -> the adapter class, imported only when asked for.
Other packages add guards through the ``localeval.guards`` entry point (:mod:`..plugins`)."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

from ..declared import parse_if_text
from ..errors import LocalevalError
from ..plugins import Part, table
from .base import Guard
from .staged import StagedGuard

# name -> "module:class" (the order of the --guard help)
GUARDS: dict[str, str] = {
    "zero-shot": "localeval.guards.zero_shot:ZeroShotGuard",
    "zero-shot-verdict": "localeval.guards.zero_shot_verdict:VerdictZeroShotGuard",
    "llamaguard3": "localeval.guards.llamaguard:LlamaGuard3",
    "llamaguard4": "localeval.guards.llamaguard:LlamaGuard4",
    "sealguard": "localeval.guards.llamaguard:SEALGuard",  # as Parallax-AI c853033 reads it
    "shieldgemma": "localeval.guards.shieldgemma:ShieldGemma",
    "qwen3guard": "localeval.guards.qwen3guard:Qwen3Guard",
    "polyguard": "localeval.guards.polyguard:PolyGuard",
    "wildguard": "localeval.guards.wildguard:WildGuard",
    "xguard": "localeval.guards.xguard:XGuard",
    "sealion-guard": "localeval.guards.sealionguard:SealionGuard",
    "agentic": "localeval.guards.agentic:AgenticGuard",
    "agentic-moe": "localeval.guards.agentic:AgenticMoEGuard",
    "lionguard2": "localeval.guards.lionguard2:LionGuard2",  # its head on an openai-embed: model
    # moderation APIs: keys and endpoints from environment variables (guards/moderation.py)
    "openai-moderation": "localeval.guards.moderation:OpenAIModeration",
    "azure-content-safety": "localeval.guards.moderation:AzureContentSafety",
    "model-armor": "localeval.guards.moderation:ModelArmor",
    "lakera-guard": "localeval.guards.moderation:LakeraGuard",
}


@dataclass(frozen=True)
class FineTune:
    """A checkpoint the authors' code runs as a family we have: ``--guard <name>`` (or its Hub
    id) is the family's class with ``options`` fixed (what the code reads it with); the rest of
    the family's options stay the user's, defaults included."""

    family: str  # its GUARDS name
    checkpoint: str  # the Hub id the authors' code names
    options: dict[str, str] = field(default_factory=dict)


_PARALLAX = "panuthept/Parallax-AI parallax_ai/modules/safeguard_modules/{}@c853033"
# Parallax-AI c853033 parallax_ai/modules/safeguard_modules/auto_module.py:25-33
# AutoSafeguardModule.mapping: these ids to SealionGuardModule (Llama header, l.47 of
# sealionguard_module.py) or GemmaSealionGuardModule (chat messages, the Gemma model turn):
# the template, labels (safe / s / unsafe) and position (the first new token) of our
# sealion-guard, family llama or gemma. The newer rules that code reads them with (Sensitive at
# 0.5, top 20) are options: sensitive=half, label_scores=top-20 (guards/sealionguard.py).
FINE_TUNES: dict[str, FineTune] = {
    "sea-guard-v2": FineTune("sealion-guard", "aisingapore/SEA-Guard-V2", {"family": "llama"}),
    **{f"llama-guard-delta-{size.lower()}": FineTune(
        "sealion-guard", f"aisingapore/Llama-Guard-Delta-{size}", {"family": "llama"})
       for size in ("100k", "200k", "300k-rerun", "400k", "500k", "500k-no-Generic")},
    "gemma-guard-4b-delta": FineTune("sealion-guard", "aisingapore/Gemma-Guard-4B-Delta",
                                     {"family": "gemma"}),
    "gemma-guard-sealion-27b-delta": FineTune(
        "sealion-guard", "aisingapore/Gemma-Guard-SEALION-27B-Delta", {"family": "gemma"}),
}

# Parallax-AI c853033 parallax_ai/modules/safeguard_modules/auto_module.py:13-24
# (AutoSafeguardModule.mapping): the Hub ids it maps to a family we have, each the very guard
# the family's name makes (a run by either is one run). Its reading stays IRIS's (the paper's
# Table 2) by default; the newer module's is the family's option (reading=parallax,
# controversial=half, sensitive=half, label_scores=top-20: docs/fidelity.md P1-P8).
CHECKPOINTS: dict[str, str] = {
    **{f"google/shieldgemma-{size}": "shieldgemma" for size in ("2b", "9b", "27b")},
    "meta-llama/Llama-Guard-3-1B": "llamaguard3",
    "meta-llama/Llama-Guard-3-8B": "llamaguard3",
    "meta-llama/Llama-Guard-4-12B": "llamaguard4",
    **{f"ToxicityPrompts/PolyGuard-{size}": "polyguard"
       for size in ("Qwen-Smol", "Qwen", "Ministral")},
    "MickyMike/SEALGuard-1.5B": "sealguard",
    "MickyMike/SEALGuard-7B": "sealguard",
    "Qwen/Qwen3Guard-Gen-8B": "qwen3guard",
}


def checkpoints_of(name: str) -> tuple[str, ...]:
    """The Hub ids ``--guard`` also takes for guard ``name`` (its own or a fine-tune's)."""
    tune = FINE_TUNES.get(name)
    return (*(c for c, family in CHECKPOINTS.items() if family == name),
            *((tune.checkpoint,) if tune else ()))


# Where each built-in guard comes from, "owner/repo path@commit": the file of the paper's code
# (or the model's own repository) that its module cites, at the commit docs/fidelity.md says
# the upstream code was read at (panuthept/IRIS 8cfede9). `localeval guards` lists it; a guard
# of our own wording (zero-shot-verdict) has none.
IRIS = "panuthept/IRIS src/iris/model_wrappers/guard_models/{}@8cfede9"
# a guard with reading=parallax (issue 72) also names the newer module that option reads as
_OR_PARALLAX = "{}; reading=parallax: " + _PARALLAX
UPSTREAM: dict[str, str] = {
    "zero-shot": IRIS.format("llm_guard.py"),
    "llamaguard3": _OR_PARALLAX.format(IRIS.format("llama_guard.py"), "llamaguard_module.py"),
    "llamaguard4": _OR_PARALLAX.format(IRIS.format("llama_guard.py"), "llamaguard_module.py"),
    "shieldgemma": _OR_PARALLAX.format(IRIS.format("shield_gemma.py"), "shieldgemma_module.py"),
    "sealguard": _PARALLAX.format("sealguard_module.py"),
    "qwen3guard": "panuthept/Parallax-AI parallax_ai/modules/safeguards/base_module.py@8348665",
    "polyguard": _OR_PARALLAX.format(IRIS.format("poly_guard.py"), "polyguard_module.py"),
    "wildguard": IRIS.format("wild_guard.py"),
    "xguard": IRIS.format("x_guard.py"),
    "sealion-guard": IRIS.format("sealion_guard.py"),
    "lionguard2": IRIS.format("lion_guard.py"),
    "openai-moderation": IRIS.format("openai_moderation.py"),
    "azure-content-safety": IRIS.format("azure_ai_content_safety.py"),
    "model-armor": IRIS.format("google_model_armor.py"),
    "lakera-guard": IRIS.format("lakera_guard.py"),
    # issue 73: the prompted guards of the same commit
    "agentic": "panuthept/Parallax-AI parallax_ai/builtins/safeguards/agentic_safeguard.py@c853033",
    "agentic-moe": "panuthept/Parallax-AI parallax_ai/builtins/safeguards/agentic_safeguard.py"
                   "@c853033",
    # issue 72's fine-tunes: the newer Parallax-AI module that reads each
    **{name: _PARALLAX.format("sealionguard_module.py") for name in FINE_TUNES},
}


def guard_table() -> dict[str, Part]:
    """Every guard by name: the built-in ones (the fine-tunes among them by their family's
    class), then other packages' (not imported)."""
    tunes = {name: GUARDS[tune.family] for name, tune in FINE_TUNES.items()}
    return table("localeval.guards", {**GUARDS, **tunes})


def available_guards() -> list[str]:
    return sorted(guard_table())


# what --guard's help says of a guard beside its name
NOTES = {
    "zero-shot": "the paper's prompt",
    "zero-shot-verdict": "ours, with a verdict prefill",
    "sealguard": "MickyMike/SEALGuard as Parallax-AI reads it",
    "agentic": "Parallax-AI's five-level JSON answers",
    "agentic-moe": "a cultural classifier, then agentic per culture",
    "lionguard2": "its head on an openai-embed: embedder",
    "openai-moderation": "an API: keys from the environment",
    "azure-content-safety": "an API",
    "model-armor": "an API",
    "lakera-guard": "an API",
}


def guards_help() -> str:
    """The guards as ``--guard``'s help lists them, from the table (none imported)."""
    named = []
    for part in guard_table().values():
        note = NOTES.get(part.name) if part.built_in else f"from {part.origin}"
        if part.built_in and part.name in FINE_TUNES:
            tune = FINE_TUNES[part.name]
            note = " ".join([tune.family, *(f"{k}={v}" for k, v in tune.options.items())])
        named.append(f"{part.name} ({note})" if note else part.name)
    return ", ".join(named)


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
    by_checkpoint = {**{c.lower(): family for c, family in CHECKPOINTS.items()},
                     **{tune.checkpoint.lower(): n for n, tune in FINE_TUNES.items()}}
    key = by_checkpoint.get(name.strip().lower(), key)  # a guard named by its Hub id
    guards = guard_table()
    if key not in guards:
        raise LocalevalError(f"unknown guard {name!r}; available: {', '.join(sorted(guards))}, "
                             "embedding:<guard file>")
    part = guards[key]
    cls = part.load()
    source = f"guard {key!r} ({part.target}, from {part.origin})"
    if not (isinstance(cls, type) and issubclass(cls, Guard)):
        raise LocalevalError(f"{source} is not a localeval.guards.Guard subclass")
    tune = FINE_TUNES.get(key) if part.built_in else None
    if tune is not None:
        # its own value is no change (a run's recorded options, read back to resume or rescore)
        fixed = sorted(k for k in set(options) & set(tune.options)
                       if str(options[k]) != tune.options[k])
        if fixed:
            raise LocalevalError(f"guard {key!r} is {tune.family} with "
                                 f"{', '.join(f'{k}={tune.options[k]}' for k in fixed)} fixed "
                                 f"({tune.checkpoint}); use --guard {tune.family} to set it")
        options = {**tune.options, **options}
    options = _declared_options(cls, key, dict(options))
    label_scores = options.pop("label_scores", None)  # every guard on a language model's
    position = options.pop("verdict_position", None)  # theirs too (issue 49 item 1)
    try:
        made = cls(**options)
    except LocalevalError:
        raise
    except Exception as e:  # noqa: BLE001 - another package's code: any failure named
        if part.built_in:
            raise
        raise LocalevalError(f"{source} cannot be made: {type(e).__name__}: "
                             f"{str(e).strip().splitlines()[0] if str(e).strip() else ''}"
                             ) from None
    made.source, made.plugin = source, not part.built_in
    if tune is not None:
        made.name = key  # what its messages and records call it: the checkpoint's id
        made.template_source = (f"{tune.checkpoint} as {UPSTREAM[key]} reads it, the same as "
                                f"{made.template_source}")
    if label_scores is not None and isinstance(made, StagedGuard):  # checked just above
        made.set_label_scores(label_scores)
    if position is not None and isinstance(made, StagedGuard):
        made.set_verdict_position(position)
    made.options = {**options, **({"label_scores": label_scores} if label_scores else {}),
                    **({"verdict_position": position} if position else {})}
    return made


def _declared_options(cls: type, key: str, options: dict) -> dict:
    """The guard's options, each one it does not have a one-line error, each text from the
    command line (--guard-option reasoning=true) parsed by the type its parameter declares."""
    parameters = {n: p for n, p in inspect.signature(cls).parameters.items() if n != "self"}
    staged = ["label_scores", "verdict_position"] if issubclass(cls, StagedGuard) else []
    for name in ("label_scores", "verdict_position"):
        if name in options and not staged:
            raise LocalevalError(f"guard {key!r} reads no label log-probs: {name} is an "
                                 "option of the guards on a language model")
    unknown = sorted(set(options) - set(parameters) - set(staged))
    if unknown:
        raise LocalevalError(f"guard {key!r} has no option(s) {', '.join(unknown)}; it accepts: "
                             f"{', '.join([*parameters, *staged]) or 'no options'}")
    return {k: v if k not in parameters or parameters[k].annotation is inspect.Parameter.empty
            else parse_if_text(parameters[k].annotation, v, f"guard option {k}")
            for k, v in options.items()}
