"""Every built-in guard family's options, declared once (issue 67), as a task kind's are: a
frozen dataclass of :func:`~localeval.options.option` fields, each with its type (a
``Literal`` has its choices), default, help text and role. ``--guard-option KEY=VALUE`` (and a
judge's or a safeguard's) is read into the guard's ``Options`` before anything loads: a name it
does not declare, or a value outside its choices, is one line naming the guard, the option, the
choices and the value. The guard is then made whole from the object (``Guard(options)``) and
never changed after; the run's spec holds the object, so a run's name and protocol facts say
each option given.

This module imports no guard (none of their backends, numpy or torch): ``--guard-option``'s
help and ``localeval guards`` list the options from here. A guard module takes its family's
class from here (``Options = LlamaGuard3Options``); :data:`OPTIONS` names each by the guard's
``--guard`` name. Another package's guard declares its own ``Options`` on
:class:`GuardOptions` the same way (docs/plugins.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal, Self, get_args

from ..errors import LocalevalError
from ..options import Options, choices_of, make_options, option, option_fields


@dataclass(frozen=True)
class GuardOptions(Options):
    """The base of every guard's ``Options``. ``given`` holds what the user gave, as parsed
    (config.json records it, so a run's record says what was asked for, not every default)."""

    @classmethod
    def problem(cls, f: dataclasses.Field[Any], expected: str, value: Any) -> str:
        return f"option {f.name} must be {expected}, not {value!r}"

    @classmethod
    def made(cls, guard: str, given: Mapping[str, Any]) -> Self:
        """The options of guard ``guard`` (its ``--guard`` name) from ``given`` (names as in
        Python, values typed or text); every refusal one line naming the guard."""
        try:
            made: Self = make_options(cls, guard, dict(given), owner="guard")
        except LocalevalError as e:
            text = str(e)  # "option x must be …", or the parser's "x='…': expected …"
            if not text.startswith(("guard ", "option ")):
                text = f"option {text}"
            raise type(e)(text if text.startswith("guard ") else
                          f"guard {guard!r} {text}") from None
        except Exception as e:  # noqa: BLE001 - another package's checks: any failure named
            lines = str(e).strip().splitlines()  # a required option not given, its own check
            raise LocalevalError(f"guard {guard!r} options refused: {type(e).__name__}: "
                                 f"{lines[0] if lines else ''}") from None
        names = {f.name: f for f in option_fields(cls)}
        # a plain dict (it pickles, a Ray worker's copy too), read through a read-only view
        object.__setattr__(made, "_given", {k: getattr(made, k) if k in names else v
                                            for k, v in given.items()})
        return made

    @property
    def given(self) -> Mapping[str, Any]:
        """The options given (each as its field holds it); the defaults are not in it."""
        return MappingProxyType(getattr(self, "_given", {}))


def _positive(default: int | None, help: str) -> Any:
    return option(default, help, check="positive")


def _flag(help: str) -> Any:
    return option(False, help, check="flag")


# ----------------------------------------------------------------------- guards on an LM
VerdictPosition = Literal["first-label", "fixed"]
VERDICT_POSITIONS: tuple[VerdictPosition, ...] = get_args(VerdictPosition)


@dataclass(frozen=True)
class LMGuardOptions(GuardOptions):
    """What every guard on a language model (a :class:`~.staged.StagedGuard`) takes: how label
    log-probs become scores, and where a guard its authors run generating reads its verdict."""

    label_scores: str | None = option(
        None, "top-k (the authors': the labels among the guard's own top k log-probs, "
        "renormalised; the default), top-N (among the top N) or full (both labels over the "
        "whole vocabulary, ours)")
    verdict_position: VerdictPosition | None = option(
        None, "first-label (the authors': the first generated position whose top k holds a "
        "label; the default where they generate) or fixed (the position right after the "
        "prompt, ours)")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.label_scores is None:
            return
        text = self.label_scores.strip().lower()  # "Full" as "full", as before the options
        object.__setattr__(self, "label_scores", text)
        n = text[4:] if text.startswith("top-") else ""
        if text not in ("top-k", "full") and not (n.isdigit() and int(n) >= 1):
            raise LocalevalError(f"option label_scores must be top-k (the authors' top k "
                                 f"log-probs), top-N or full, not {text!r}")


Decoding = Literal["generation-config", "greedy"]
DECODING_HELP = ("generation-config (the authors': generate() without do_sample, so the "
                 "checkpoint's generation_config decides, seeded) or greedy (ours)")
Reading = Literal["iris", "parallax"]
READING_HELP = ("iris (panuthept/IRIS, the paper's code; the default) or parallax "
                "(panuthept/Parallax-AI c853033's module: docs/fidelity.md P5-P7)")


@dataclass(frozen=True)
class ZeroShotOptions(LMGuardOptions):
    cultural_awareness: bool = _flag("name each item's country in the prompt (paper Table 3)")
    reasoning: bool = _flag("let the model reason before its label (IRIS GPTOSS)")
    reasoning_tokens: int | None = _positive(None, "the reasoning's budget (needs "
                                             "reasoning=true; default 1024, IRIS's)")
    decoding: Decoding = option("generation-config", DECODING_HELP)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.reasoning_tokens is not None and not self.reasoning:
            raise LocalevalError("option reasoning_tokens needs reasoning=true (it is the "
                                 "budget of the reasoning before the label)")


VerdictStyle = Literal["harmful-safe", "yes-no"]


@dataclass(frozen=True)
class VerdictZeroShotOptions(LMGuardOptions):
    style: VerdictStyle = option("harmful-safe", "the question and its two labels")
    cultural_awareness: bool = _flag("name each item's country in the prompt (paper Table 3)")


LlamaGuardTemplate = Literal["own", "hf", "meta"]


@dataclass(frozen=True)
class LlamaGuard3Options(LMGuardOptions):
    categories: Literal[13, 14] | None = option(
        None, "for template=hf or meta: 14 (S1-S14, the 8B model's; their default) or 13 "
        "(S1-S13, Llama Guard 3 1B's)")
    template: LlamaGuardTemplate = option(
        "own", "own (the checkpoint's chat template, rendered by the backend; the default), "
        "hf (the 8B model's HF template text) or meta (Meta's format page)")
    reading: Reading = option("iris", READING_HELP)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.template == "own" and self.categories is not None:
            raise LocalevalError("option categories applies to template=hf or meta: the "
                                 "checkpoint's own template (the default) prints its own list")
        if self.reading == "parallax" and self.template != "own":
            raise LocalevalError("option reading=parallax sends the messages to the "
                                 "checkpoint's own chat template, as Parallax-AI's chat "
                                 "request does: use it with template=own (the default)")


@dataclass(frozen=True)
class LlamaGuard4Options(LMGuardOptions):
    reading: Reading = option("iris", READING_HELP)


ShieldGemmaPolicy = Literal["dangerous", "harassment", "hate", "sexual"]
ShieldGemmaMode = Literal["combined", "per-policy"]


@dataclass(frozen=True)
class ShieldGemmaOptions(LMGuardOptions):
    policies: str | None = option(
        None, "comma-separated: " + ", ".join(get_args(ShieldGemmaPolicy)) + " (default: all "
        "four; from Python a list too)")
    mode: ShieldGemmaMode = option("combined", "combined (one request for every policy, "
                                   "IRIS) or per-policy (one each, the highest P(Yes))")
    reading: Reading = option("iris", READING_HELP)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.reading == "parallax" and self.mode != "combined":
            raise LocalevalError("option reading=parallax sends the four policies in one "
                                 "request, as Parallax-AI does: use it with mode=combined (the "
                                 "default)")
        if self.policies is None:
            return
        if not isinstance(self.policies, str):  # a Python caller's list: as the flag's text
            object.__setattr__(self, "policies", ",".join(self.policies))
        chosen = [p.strip() for p in self.policies.split(",") if p.strip()]
        allowed = get_args(ShieldGemmaPolicy)
        unknown = [p for p in chosen if p not in allowed]
        if unknown or not chosen:
            raise LocalevalError(f"option policies must name some of {', '.join(allowed)}, "
                                 f"not {self.policies!r}")

    @property
    def policy_list(self) -> tuple[str, ...]:
        """The policies chosen, in the order given (all four by default)."""
        if self.policies is None:
            return get_args(ShieldGemmaPolicy)
        return tuple(p.strip() for p in self.policies.split(",") if p.strip())


Controversial = Literal["paper", "harmful", "safe", "half"]


@dataclass(frozen=True)
class Qwen3GuardOptions(LMGuardOptions):
    controversial: Controversial = option(
        "paper", "how Controversial counts: paper (harmful in a prompt, safe in a response: "
        "the paper's code), harmful, safe or half")


PolyGuardReading = Literal["answer", "prefill", "parallax"]


@dataclass(frozen=True)
class PolyGuardOptions(LMGuardOptions):
    reading: PolyGuardReading = option(
        "answer", "answer (IRIS poly_guard.py: the bare chat's answer; the default), prefill "
        "(ours before issue 64) or parallax (Parallax-AI c853033's module)")


@dataclass(frozen=True)
class XGuardOptions(LMGuardOptions):
    # IRIS x_guard.py evaluate_guard: max_new_tokens
    max_tokens: int = _positive(8192, "the reasoning's budget (IRIS x_guard.py "
                                "max_new_tokens)")
    translator: str | None = option("saillab/mbart-x-guard", "the translator's model "
                                    "(the run's translator role), or none: the text as it is")
    translation_tokens: int = _positive(1024, "the translation's budget")
    decoding: Decoding = option("generation-config", DECODING_HELP)


SealionFamily = Literal["llama", "gemma"]
SealionLabels = Literal["three", "two"]
SealionSensitive = Literal["iris", "harmful", "safe", "half", "prompts"]


@dataclass(frozen=True)
class SealionGuardOptions(LMGuardOptions):
    family: SealionFamily = option("llama", "the checkpoint's model turn header: llama or "
                                   "gemma")
    labels: SealionLabels = option("three", "three (safe / s / unsafe, IRIS) or two")
    sensitive: SealionSensitive = option(
        "iris", "how the Sensitive label counts: iris (the authors' code), harmful, safe, half "
        "(Parallax-AI's newer 0.5) or prompts")


AgenticCriteria = Literal["with-cot", "always"]
AgenticEmptyOutput = Literal["safe", "fail"]


@dataclass(frozen=True)
class AgenticOptions(GuardOptions):
    self_consistency: int = _positive(1, "answers drawn per question (Parallax-AI's n)")
    chain_of_thought: bool = _flag("ask for the reasoning before the answer")
    criteria: AgenticCriteria = option("with-cot", "with-cot (the authors': the criteria only "
                                       "with chain of thought) or always")
    empty_output: AgenticEmptyOutput = option("safe", "safe (the authors': 0.0 when every try "
                                              "failed) or fail")
    # Parallax-AI c853033 agent_module.py:186 AgentModule.max_retries, read by proxy.py:13
    retries: int = _positive(10, "tries of a question none of whose answers parsed "
                             "(Parallax-AI's 10)")
    # ours: the authors send no max_tokens (agent_module.py:46-50, kwargs {})
    max_tokens: int = _positive(4096, "the budget of each answer (ours: the authors send none)")
    seed: int = option(0, "the draws' seed beside the request", check="integer")


@dataclass(frozen=True)
class AgenticMoEOptions(AgenticOptions):
    classifier: str | None = option(None, "the cultural classifier's model (a backend spec, "
                                    "the run's classifier role); default the guard's own")


@dataclass(frozen=True)
class LionGuard2Options(GuardOptions):
    head: str = option("govtech/lionguard-2", "the classifier head (a Hub id or a folder)")


@dataclass(frozen=True)
class OpenAIModerationOptions(GuardOptions):
    model: str = option("omni-moderation-latest", "the moderation model")


SeverityLevels = Literal["EightSeverityLevels", "FourSeverityLevels"]


@dataclass(frozen=True)
class AzureContentSafetyOptions(GuardOptions):
    output_type: SeverityLevels = option("EightSeverityLevels", "Azure's severity scale")


@dataclass(frozen=True)
class LakeraGuardOptions(GuardOptions):
    detectors: str = option("", "comma-separated detector_type prefixes that count (default: "
                            "every detector, as IRIS)")


@dataclass(frozen=True)
class EmbeddingOptions(GuardOptions):
    path: str = option("", "the guard file `localeval train-guard` wrote (--guard "
                       "embedding:<file>)")


# a guard's --guard name -> its options (a fine-tune's are its family's: registry.FINE_TUNES)
OPTIONS: dict[str, type[GuardOptions]] = {
    "zero-shot": ZeroShotOptions,
    "zero-shot-verdict": VerdictZeroShotOptions,
    "llamaguard3": LlamaGuard3Options,
    "llamaguard4": LlamaGuard4Options,
    "sealguard": LMGuardOptions,
    "shieldgemma": ShieldGemmaOptions,
    "qwen3guard": Qwen3GuardOptions,
    "polyguard": PolyGuardOptions,
    "wildguard": LMGuardOptions,
    "xguard": XGuardOptions,
    "sealion-guard": SealionGuardOptions,
    "agentic": AgenticOptions,
    "agentic-moe": AgenticMoEOptions,
    "lionguard2": LionGuard2Options,
    "openai-moderation": OpenAIModerationOptions,
    "azure-content-safety": AzureContentSafetyOptions,
    "model-armor": GuardOptions,
    "lakera-guard": LakeraGuardOptions,
}


def describe_options(options_class: type[GuardOptions]) -> list[dict[str, str]]:
    """Each option of a guard as ``localeval guards NAME`` shows it: name, default, choices
    and help, its family's own first."""
    shared = {f.name for f in option_fields(LMGuardOptions)}
    rows = []
    for f in sorted(option_fields(options_class), key=lambda f: f.name in shared):
        choices = choices_of(options_class, f) or ()
        default = "none" if f.default is None else str(f.default).lower() \
            if isinstance(f.default, bool) else str(f.default)
        rows.append({"option": f.name, "default": default,
                     "choices": ", ".join(str(c) for c in choices if c is not None),
                     "help": str(f.metadata.get("help", ""))})
    return rows


def options_line(options_class: type[GuardOptions]) -> tuple[str, ...]:
    """Each option as ``name=default``, a choice's other values after it
    (``reading=iris|parallax``): the family's own first, then what every guard on a language
    model takes (``localeval guards``, ``--guard-option``'s help)."""
    shared = {f.name for f in option_fields(LMGuardOptions)}
    fields = sorted(option_fields(options_class), key=lambda f: f.name in shared)
    return tuple(_shown(options_class, f) for f in fields)


def _shown(options_class: type[GuardOptions], f: dataclasses.Field[Any]) -> str:
    def text(value: Any) -> str:
        return "none" if value is None else str(value).lower() if isinstance(value, bool) \
            else str(value)
    if f.name == "label_scores":  # None is the guard's own k
        return "label_scores=top-k|top-N|full"
    others = [text(c) for c in choices_of(options_class, f) or () if c != f.default]
    return f"{f.name}=" + "|".join([text(f.default), *others])
