"""The options of the safety tasks, declared once (the command line's flags and ``evaluate``'s
documentation come from them): which items a run takes and how their labels count
(:class:`SafetySelection`, shared with ``llm-safety``), and the safeguard task's own
(:class:`SafeguardOptions`)."""

from __future__ import annotations

# names and defaults only (no numpy): the command line builds its flags from these options
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, get_args

from ..analysis.choices import N_RESAMPLES, PAPER_EN_CELL, EnCell
from ..declared import shown
from ..errors import LocalevalError
from ..guards.registry import guards_help  # the table's names, no guard imported
from ..metrics.choices import (
    DEFAULT_FILE_ROUNDING,
    PAPER_AUPRC,
    PAPER_ONE_CLASS,
    PAPER_THRESHOLD_GRID,
    PAPER_THRESHOLD_RULE,
    Auprc,
    FileRounding,
    OneClass,
    ThresholdGrid,
    ThresholdRule,
)
from .label_policy import DEFAULT_SENSITIVE, SENSITIVE_CHOICES, Sensitive
from .options import TaskOptions, option

if TYPE_CHECKING:  # an annotation only: the guards import the backends
    from ..guards import Guard

# What a failed guard verdict becomes: left out and counted (ours), 1/#labels (Parallax-AI's
# default output), or what IRIS scores that kind of failure (Guard.iris_failure_score)
OnFailure = Literal["exclude", "neutral", "iris"]
ON_FAILURE: tuple[OnFailure, ...] = get_args(OnFailure)
# classify choice -> the (kind, context) samples it plans
CLASSIFY = {
    "prompt": (("prompt", "with_prompt"),),
    "response": (("response", "with_prompt"), ("response", "without_prompt")),
    "response-with-prompt": (("response", "with_prompt"),),
    "response-without-prompt": (("response", "without_prompt"),),
}


SENSITIVE_HELP = ("how 'sensitive' labels count: " + ", ".join(SENSITIVE_CHOICES) + " (default "
                  "iris, the authors' code: harmful, except prompts of cultural-cg, safe; "
                  "paper: §3's text, safe for prompts and harmful for responses)")
BOOTSTRAP_HELP = ("bootstrap resamples for PR-AUC's 95% CIs (0: none); llm-safety's rates take "
                  "the Wilson interval, which 0 turns off")


# task -> what it classifies unless told otherwise
DEFAULT_CLASSIFY: dict[str, tuple[str, ...]] = {
    "sea-safeguard": ("prompt", "response"),
    "safety-prompts": ("prompt",),
    "safety-responses": ("response",),
}


@dataclass(frozen=True)
class SafetySelection(TaskOptions):
    """The items of a safety benchmark a run takes, and how their labels count."""

    data: str | Path | None = option(None, "local folder or file instead of the Hugging Face "
                                     "Hub")
    limit: int | None = option(None, "at most N item ids per subset (all languages kept)",
                               type=int)
    dataset_revision: str | None = option(None, "dataset revision on the Hub (branch, tag, "
                                          "commit)")
    subsets: list[str] | None = option(None, "comma-separated: general, cultural-itw, "
                                       "cultural-cg", flag="--subset")
    langs: list[str] | None = option(None, "comma-separated language codes (default: all)",
                                     flag="--lang")
    sensitive: Sensitive | None = option(None, SENSITIVE_HELP, rescorable=True)
    n_resamples: int = option(N_RESAMPLES, BOOTSTRAP_HELP, flag="--bootstrap", type=int,
                              rescorable=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        # refused here, before any data or model loads (not after every request has run)
        if self.limit is not None and self.limit < 1:
            raise LocalevalError(f"--limit must be at least 1, not {self.limit}")
        if self.n_resamples < 0:
            raise LocalevalError(f"--bootstrap must be 0 (no CIs) or more, not "
                                 f"{self.n_resamples}")


@dataclass(frozen=True)
class SafeguardOptions(SafetySelection):
    """Safeguards (sea-safeguard, safety-prompts, safety-responses)."""

    guard: str | Guard = option(
        "zero-shot", f"guard adapter: {guards_help()}; or embedding:<file> (a guard trained by "
        "`localeval train-guard`)", role="model")
    guard_options: dict | None = option(
        None, "an option of the guard, repeatable: e.g. mode=per-policy (shieldgemma), "
        "controversial=harmful (qwen3guard), translator=none (xguard); each guard's: "
        "`localeval guards GUARD`", flag="--guard-option", parse="pairs", metavar="KEY=VALUE",
        role="model", guard_of="guard",
        shortcut=("--cultural-awareness", "cultural_awareness",
                  "tell the zero-shot guard each item's country (paper Table 3); the same as "
                  "--guard-option cultural_awareness=true"))
    classify: list[str] | None = option(
        None, "comma-separated: " + ", ".join(CLASSIFY) + " (default: the task's)")
    calibrate_on: str = option("en", "language whose best-F1 threshold is applied to the "
                               "others", metavar="LANG", rescorable=True)
    auprc: Auprc = option(PAPER_AUPRC, "PR-AUC of the tables: trapezoid under the PR curve (the "
                          "paper's code) or ap (average precision); results.json holds both",
                          rescorable=True)
    en_cell: EnCell = option(PAPER_EN_CELL, "Table 2's EN cells of the cultural subsets: "
                             "per-country (the mean of each country's English PR-AUC, the "
                             "authors' code) or pooled (one PR-AUC over every English item)",
                             rescorable=True)
    threshold_rule: ThresholdRule = option(
        PAPER_THRESHOLD_RULE, "at a threshold t, harmful means score > t (gt, the authors' "
        "metrics code) or score >= t (ge)", rescorable=True)
    threshold_grid: ThresholdGrid = option(
        PAPER_THRESHOLD_GRID, "thresholds of the sweep (Fig. 5) and of best F1: iris (0.01, "
        "then numpy.arange(0.02, 1.00, 0.01) with its float values, the authors' code) or "
        "decimal (0.01 .. 0.99 exactly)", rescorable=True)
    one_class: OneClass = option(
        PAPER_ONE_CLASS, "a file (a group of a Table 2 cell) whose items are all one class: iris "
        "(scikit-learn's PR-AUC, 1.0 all harmful and 0.5 all safe, in the mean: the authors' "
        "code) or left-out (no value, left out of every mean)", rescorable=True)
    file_rounding: FileRounding = option(
        DEFAULT_FILE_ROUNDING, "each file's value before a Table 2 / D.5 cell's mean: none, or "
        "iris (rounded to 0.1 points first, as the authors' code)", rescorable=True)
    on_failure: OnFailure = option(
        "exclude", "a failed guard sample: exclude (left out and counted), neutral (scored "
        "1/#labels and kept, as Parallax-AI) or iris (as IRIS per kind of failure: an HTTP 400 or "
        "a prompt over the model's context 1/#labels, PolyGuard's response after one 0.0, no "
        "label found 0.0, a failed call left out)", rescorable=True)
    log_samples: bool = option(True, "samples.jsonl keeps a sha256 of each prompt and response "
                               "instead of the text", flag="--no-log-samples",
                               action="store_false", role="output")

    kind = "safety"

    def resolved(self, task: str) -> dict[str, Any]:
        """What it classifies and the label policy, as a run of ``task`` resolves them."""
        return {**super().resolved(task),
                "classify": list(self.classify or DEFAULT_CLASSIFY.get(task, ())),
                "sensitive": self.sensitive or DEFAULT_SENSITIVE}

    @classmethod
    def whole(cls, name: str, task: str) -> tuple[Any, ...] | None:
        """SEA-SafeguardBench's three subsets and eight languages."""
        from ..data.safety import SEA_LANGS, SUBSETS

        if task != "sea-safeguard":
            return None
        return tuple(sorted(SUBSETS)) if name == "subsets" else \
            tuple(sorted(("en", *SEA_LANGS))) if name == "langs" else None
    # how the guard was read, which no option of the task says: with the cultural prompt
    # (config.json's own key), its label scores, its verdict's position
    reading_keys = ("cultural_awareness", "label_scores", "verdict_position")
    paper_reading: ClassVar[Mapping[str, Any]] = {
        "cultural_awareness": False, "label_scores": "top-k", "verdict_position": None}

    @classmethod
    def reading_facts(cls, reading: Mapping[str, Any]) -> dict[str, str]:
        facts = {"cultural awareness": shown(reading.get("cultural_awareness")),
                 "label scores": shown(reading.get("label_scores"))}
        if "label_scores" in reading and reading["label_scores"] is None:
            facts["label scores"] = "top-k"  # a guard that reads no log-probs truncates none
        # issue 49 item 1: a folder from before it read one fixed position; None: the guard
        # is read where its authors read it
        facts["verdict position"] = "fixed" if reading.get("verdict_position", "fixed") == \
            "fixed" else "authors'"
        return facts

    # the guard's own words of itself, in its block (SafeguardTask.spec)
    described_keys = ("guard.template_source", "guard.reads_verdict_at", "guard.label_top")

    def record(self, names: frozenset[str], dataset: str | None = None) -> dict[str, Any]:
        """The guard as ``{"name", "options"}``; the bootstrap's resamples are results.json's."""
        out = super().record(names, dataset)
        out.pop("n_resamples", None)
        if "guard" in out:
            guard = out.pop("guard")
            out["guard"] = {"name": guard if isinstance(guard, str) else type(guard).__name__,
                            "options": dict(out.pop("guard_options", None) or {})}
        return out

    @classmethod
    def recorded(cls, config: Mapping[str, Any], results: Mapping[str, Any]) -> dict[str, Any]:
        """config.json records the guard as ``{"name", "options"}`` and results.json the
        bootstrap's resamples."""
        options = super().recorded(config, results)
        guard = config.get("guard") or {}
        if not isinstance(guard, dict):  # a guard by its name alone, as the options give it
            guard = {"name": guard}
        options.update(guard=guard.get("name", "zero-shot"),
                       guard_options=guard.get("options") or None)
        options.pop("n_resamples", None)  # config.json never records it: results.json does
        if results.get("n_resamples") is not None:
            options["n_resamples"] = results["n_resamples"]
        return options
