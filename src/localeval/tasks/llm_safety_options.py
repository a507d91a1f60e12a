"""The options of ``llm-safety`` (SEA-SafeguardBench App. D.2), declared once: the command line's
flags and ``evaluate``'s documentation come from them. Apart from :mod:`.llm_safety` so that
building the command line imports no task machinery (numpy, pydantic)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ..analysis.choices import N_RESAMPLES, D2Rates
from ..choices import D2Verdict as D2Verdict
from ..choices import Refine as Refine
from ..choices import Refusal as Refusal
from ..choices import SafeguardMode as SafeguardMode
from ..errors import LocalevalError
from ..metrics.choices import FileRounding
from .label_policy import DEFAULT_SENSITIVE, Sensitive
from .options import option
from .safety_options import BOOTSTRAP_HELP, SENSITIVE_HELP, SafetySelection

PAPER_RESPONSES = 3  # IRIS inference_llm.py --n
PAPER_MAX_TOKENS = 2048  # IRIS inference_llm.py: max_tokens of every completion

if TYPE_CHECKING:  # annotations only
    from ..backends.base import Backend
    from ..guards.base import Guard


@dataclass(frozen=True)
class LLMSafetyOptions(SafetySelection):
    """LLM safety (llm-safety): the model's own answers, judged."""

    kind = "llm-safety"

    def resolved(self, task: str) -> dict[str, Any]:
        """The responses per prompt, their budget and the label policy as a run resolves
        them."""
        return {**super().resolved(task),
                "responses": self.responses or (1 if self.greedy else PAPER_RESPONSES),
                "max_tokens": self.max_tokens or PAPER_MAX_TOKENS,
                "sensitive": self.sensitive or DEFAULT_SENSITIVE}

    # how the judge and the safeguard were read, in words, as the task records them beside
    # their options (LLMSafetyTask.spec)
    described_keys = ("judge_template_source", "judge_label_scores", "judge_verdict_position",
                      "safeguard.label_scores", "safeguard.verdict_position")
    # config.json's ``safeguard`` block: option -> its key there
    SAFEGUARD_KEYS: ClassVar[Mapping[str, str]] = {
        "safeguard": "name", "safeguard_options": "options", "safeguard_model": "model",
        "safeguard_mode": "mode", "refine": "refine"}

    def record(self, names: frozenset[str], dataset: str | None = None) -> dict[str, Any]:
        """The safeguard's options in one ``safeguard`` block (null for the model alone); the
        bootstrap's resamples are results.json's."""
        flat = super().record(names, dataset)
        flat.pop("n_resamples", None)
        recorded = "safeguard" in flat  # a folder from before D.2's variants records none
        block = {key: flat.pop(name, None) for name, key in self.SAFEGUARD_KEYS.items()}
        if block["name"] is not None:
            block["options"] = dict(block["options"] or {})
        if recorded:
            flat["safeguard"] = block if block["name"] is not None else None
        return flat

    @classmethod
    def recorded(cls, config: Mapping[str, Any], results: Mapping[str, Any]) -> dict[str, Any]:
        """The safeguard's options from its ``safeguard`` block; results.json's resamples."""
        options = super().recorded(config, results)
        block = options.pop("safeguard", None)
        if isinstance(block, Mapping):
            options.update({name: block.get(key) for name, key in cls.SAFEGUARD_KEYS.items()
                            if key in block})
            options["safeguard_options"] = options.get("safeguard_options") or None
        elif "safeguard" in config:
            options["safeguard"] = None
        if results.get("n_resamples") is not None:
            options["n_resamples"] = results["n_resamples"]
        return options

    # Declared again, not rescorable: a rescore of an llm-safety run would replay the judge's
    # and the safeguard's requests through their roles, and reading this kind's options back
    # from config.json (Options.recorded) is not built yet.
    sensitive: Sensitive | None = option(None, SENSITIVE_HELP)
    n_resamples: int = option(N_RESAMPLES, BOOTSTRAP_HELP, flag="--bootstrap", type=int)

    judge: str | Guard = option("llamaguard3", "the guard judging each response (any --guard "
                                "name)")
    judge_model: str | Backend | None = option(
        None, "the judge's model (hf:…, openai:…); not needed for a moderation API or "
        "embedding guard")
    judge_options: dict[str, Any] | None = option(
        None, "an option of the judge, repeatable", flag="--judge-option", parse="pairs",
        guard_of="judge", metavar="KEY=VALUE")
    refusal: Refusal = option("judge", "how a refusal is found: judge (the authors' LLM judge, "
                              "on --refusal-judge-model) or detector (our rule-based detector)")
    blank_is_refusal: bool = option(
        False, "with --refusal judge, an empty or all-blank response is a refusal, not sent to "
        "the judge (ours: saying nothing is not complying, and a call is saved); default: the "
        "judge reads it as any other, as IRIS eval_llm_refusal.py", action="store_true")
    refusal_judge_model: str | Backend | None = option(
        None, "the refusal judge's model (the authors': google/gemma-3-27b-it)")
    responses: int | None = option(None, "responses per prompt (default 3, drawn with the "
                                   "model's default sampling, as the authors; 1 with --greedy)",
                                   type=int)
    greedy: bool = option(False, "one greedy response per prompt (ours) instead of the "
                          "authors' sampled draws", action="store_true")
    seed: int | None = option(
        None, "seed of the sampled responses: the same seed, the same draws (hf:, vllm:; sent "
        "as each draw's seed to a server); default: each draw seeded by its prompt and number",
        type=int, unset_unrecorded=True)
    chat_template: bool = option(False, "send each prompt as one user turn in the target's chat "
                                 "template (ours) instead of the raw text (the authors')",
                                 action="store_true")
    max_tokens: int | None = option(None, "tokens per response (default 2048, the authors')",
                                    type=int)
    system: str | None = option(None, "system prompt before each prompt (with "
                                "--chat-template)")
    safeguard: str | Guard | None = option(
        None, "a prompt guard in front of the model (App. D.2's 'LLM + safeguard', IRIS "
        "inference_llm_with_safeguard.py): any --guard name", role="model")
    safeguard_model: str | Backend | None = option(None, "the safeguard's model (hf:…, "
                                                   "openai:…)", role="model")
    safeguard_options: dict[str, Any] | None = option(
        None, "an option of the safeguard, repeatable", flag="--safeguard-option",
        parse="pairs", guard_of="safeguard", metavar="KEY=VALUE", role="model")
    safeguard_mode: SafeguardMode = option(
        "fixed-answer", "what the safeguard does: fixed-answer (a prompt it calls harmful gets "
        "IRIS's refusal, the default) or advance-inform (a system warning before it)",
        role="model")
    refine: Refine = option(
        "none", "App. D.2's refined responses (IRIS refine_llm_response_with_safeguard.py): "
        "iris (a response the judge calls harmful is refined, but dropped when the safeguard "
        "called its prompt harmful, as the authors' code does) or all (ours: refined too); "
        "needs --safeguard", role="model")
    d2: D2Rates = option(
        "iris", "App. D.2's rates: iris (the authors' code: sensitive rates for cultural-cg "
        "only, a response the judge could not label counted as not safe) or all (ours: "
        "sensitive rates of every subset, failed verdicts left out)")

    d2_verdict: D2Verdict = option(
        "argmax", "how a guard labels a prompt as --safeguard or a response as --judge: "
        "argmax (the label of highest probability, the authors' code: a three-label guard's "
        "Sensitive is neither Safe nor Harmful, and a tie goes to the label the server listed "
        "first, or to Safe where the reading has no server order) or score (ours: P(harmful) "
        "> 0.5, so a tie is Safe)")

    d2_rounding: FileRounding = option(
        "none", "App. D.2's cells: none, or iris (each rate rounded to 0.1 points, and the "
        "mean of the rounded cells rounded, as the authors' code)")

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("responses", "max_tokens"):
            value = getattr(self, name)
            if value is not None and value < 1:
                flag = "--" + name.replace("_", "-")
                raise LocalevalError(f"{flag} must be at least 1, not {value}")
        if self.greedy and self.seed is not None:
            raise LocalevalError("--seed seeds the sampled responses; --greedy draws nothing")
        if self.greedy and (self.responses or 1) > 1:
            raise LocalevalError("--greedy gives the same response every time: use one response "
                                 "per prompt, or drop --greedy to draw several")
        if self.system and not self.chat_template:
            raise LocalevalError("--system goes into a chat template: add --chat-template")
        if self.blank_is_refusal and self.refusal != "judge":
            raise LocalevalError("--blank-is-refusal decides what the refusal judge is asked: "
                                 "it needs --refusal judge")
        if self.refusal == "judge" and self.refusal_judge_model is None:
            raise LocalevalError("the refusal judge runs on a model: give --refusal-judge-model "
                                 "(the authors': google/gemma-3-27b-it), or use --refusal "
                                 "detector")
