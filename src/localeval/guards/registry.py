"""The table of guards: ``--guard NAME`` -> the adapter class, imported only when asked for.
Other packages add guards through the ``localeval.guards`` entry point (:mod:`..plugins`)."""

from __future__ import annotations

import dataclasses
import inspect
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from ..errors import LocalevalError
from ..options import option
from ..plugins import Part, table
from .base import Guard
from .options import OPTIONS, EmbeddingOptions, GuardOptions, LMGuardOptions

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


def get_guard(name: str, **options: Any) -> Guard:
    """Make the guard registered as ``name`` (e.g. ``llamaguard3``, or a Hub id of one) from its
    options (names as in Python, values typed or text): read into its family's ``Options``
    first, every refusal one line naming the guard, the option, the choices and the value;
    then the guard is made whole from them. ``embedding:<file>`` is a trained embedding
    guard."""
    kind, sep, path = name.partition(":")
    if sep and kind.strip().lower() == "embedding":
        from .embedding import EmbeddingGuard

        if options:
            raise LocalevalError(f"an embedding guard takes no options (got {', '.join(options)})")
        return EmbeddingGuard(EmbeddingOptions.made("embedding", {"path": path}))
    key = guard_key(name)
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
        options = _with_fixed(key, tune, options)
    keywords = keyword_options(cls)
    options_class = cls.Options if keywords is None else \
        _keyword_options(cls, keywords, source, notice=True)
    read = [k for k in ("label_scores", "verdict_position") if k in options]
    if read and not issubclass(options_class, LMGuardOptions):
        raise LocalevalError(f"guard {key!r} reads no label log-probs: {read[0]} is an "
                             "option of the guards on a language model")
    made = _made(cls, options_class.made(key, options), options, keywords, part, source)
    problem = made.options_problem()
    if problem is not None:
        raise LocalevalError(problem)
    made.source, made.plugin = source, not part.built_in  # how messages name it
    return made if tune is None else _named_as_fine_tune(made, key, tune)


def _with_fixed(key: str, tune: FineTune, options: dict[str, Any]) -> dict[str, Any]:
    """A fine-tune's options: the ones its checkpoint fixes, then the user's; giving a fixed
    one another value is refused (its own value is no change: a run's recorded options, read
    back to resume or rescore)."""
    fixed = sorted(k for k in set(options) & set(tune.options)
                   if str(options[k]) != tune.options[k])
    if fixed:
        raise LocalevalError(f"guard {key!r} is {tune.family} with "
                             f"{', '.join(f'{k}={tune.options[k]}' for k in fixed)} fixed "
                             f"({tune.checkpoint}); use --guard {tune.family} to set it")
    return {**tune.options, **options}


def _made(cls: type[Guard], options: GuardOptions, given: Mapping[str, Any],
          keywords: tuple[str, ...] | None, part: Part, source: str) -> Guard:
    """The guard made whole from its options; a guard written before options were declared
    from its keywords, its options then set on it. Another package's failure is one line."""
    try:
        if keywords is None:
            return cls(options)
        made = cls(**{k: getattr(options, k) for k in given if k in keywords})
        made.options = options
        return made
    except LocalevalError:
        raise
    except Exception as e:  # noqa: BLE001 - another package's code: any failure named
        if part.built_in:
            raise
        lines = str(e).strip().splitlines()
        raise LocalevalError(f"{source} cannot be made: {type(e).__name__}: "
                             f"{lines[0] if lines else ''}") from None


def _named_as_fine_tune(made: Guard, key: str, tune: FineTune) -> Guard:
    """A fine-tune's guard, made as its family: named by the checkpoint's id in its messages
    and records, its template's source saying which checkpoint reads it so (instance
    attributes: a class made per fine-tune could not be pickled)."""
    made.name = key
    made.template_source = (f"{tune.checkpoint} as {UPSTREAM[key]} reads it, the same as "
                            f"{made.template_source}")
    return made


def guard_key(name: str) -> str:
    """The table's name of the guard ``--guard name`` names (a Hub id as its guard's)."""
    by_checkpoint = {**{c.lower(): family for c, family in CHECKPOINTS.items()},
                     **{tune.checkpoint.lower(): n for n, tune in FINE_TUNES.items()}}
    return by_checkpoint.get(name.strip().lower(), name.strip().lower().replace("_", "-"))


def declared_options(guard: object, given: Mapping[str, Any] | None) -> dict[str, Any]:
    """A run's recorded guard options (``given``, of the guard named ``guard``) as the guard's
    ``Options`` reads them, less those at their declared default: what a run's name and
    protocol facts say, so ``reading=iris`` given is the run without it, and a plugin guard's
    options are said as a built-in's. Options that cannot be read so (a guard this
    localeval does not know, a plugin not installed, a guard given as an object) are said as
    recorded."""
    given = dict(given or {})
    if not given or not isinstance(guard, str) or guard.partition(":")[1]:
        return given
    key = guard_key(guard)
    try:
        options_class = options_class_of(key)
        made = options_class.made(key, {**(FINE_TUNES[key].options if key in FINE_TUNES
                                           else {}), **given})
    except (LocalevalError, TypeError, ValueError):
        return given
    defaults = {f.name: f.default for f in dataclasses.fields(options_class)}
    return {k: getattr(made, k) for k in given
            if k not in defaults or getattr(made, k) != defaults[k]}


def options_class_of(key: str) -> type[GuardOptions]:
    """The ``Options`` of the guard ``key`` (the table's name): a built-in's from its
    declaration (no guard imported), another package's from its class."""
    tune = FINE_TUNES.get(key)
    if key in OPTIONS or tune is not None:
        return OPTIONS[tune.family if tune else key]
    part = guard_table().get(key)
    if part is None:
        raise LocalevalError(f"unknown guard {key!r}")
    cls = part.load()
    if not (isinstance(cls, type) and issubclass(cls, Guard)):
        raise LocalevalError(f"guard {key!r} is not a Guard")
    keywords = keyword_options(cls)
    return cls.Options if keywords is None else _keyword_options(cls, keywords, key)


def keyword_options(cls: type[Guard]) -> tuple[str, ...] | None:
    """The ``__init__`` keywords of a guard written before guards declared their options (a
    plugin's, ``def __init__(self, words: str = "…")``), or None for one made from its
    ``Options`` (``def __init__(self, options=None)``, every built-in guard)."""
    parameters = [p for n, p in inspect.signature(cls).parameters.items()
                  if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if [p.name for p in parameters] == ["options"] or cls.__init__ is Guard.__init__:
        return None
    return tuple(p.name for p in parameters)


_NOTICED: set[type] = set()
_KEYWORD_OPTIONS: dict[type, type[GuardOptions]] = {}


def _keyword_options(cls: type[Guard], keywords: tuple[str, ...], source: str,
                     notice: bool = False) -> type[GuardOptions]:
    """The options of a guard that takes ``__init__`` keywords, declared from its signature
    (each parameter's annotation and default) on its family's ``Options``, so they are typed,
    checked and recorded as a declared guard's are; said once per process."""
    if notice and cls not in _NOTICED:
        _NOTICED.add(cls)
        print(f"note: {source} takes its options as __init__ keywords ({', '.join(keywords)}); "
              "they are read as its Options (declare them: docs/plugins.md)", file=sys.stderr)
    if cls in _KEYWORD_OPTIONS:
        return _KEYWORD_OPTIONS[cls]
    parameters = inspect.signature(cls).parameters
    fields = [(n, parameters[n].annotation if parameters[n].annotation is not
               inspect.Parameter.empty else Any,
               option(None if parameters[n].default is inspect.Parameter.empty
                      else parameters[n].default, f"{cls.__name__}.__init__'s {n}"))
              for n in keywords]
    made = dataclasses.make_dataclass(f"{cls.__name__}Options", fields, bases=(cls.Options,),
                                      frozen=True, kw_only=True)
    made.__module__ = cls.__module__  # its annotations are read where the guard's are
    _KEYWORD_OPTIONS[cls] = cast(type[GuardOptions], made)  # one class each: they compare
    return _KEYWORD_OPTIONS[cls]
