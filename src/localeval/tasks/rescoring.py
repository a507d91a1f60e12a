"""What ``localeval rescore`` may change, per kind of task, and a finished run's task options
read back from its config.json (``describe()``) and results.json.

A rescore re-plans the source run's requests with the source's own options (so each one keys
the cache as it did), and scores the cached answers with the changed options. Only options that
act after the answer may change: how a generated text becomes a letter, how labels count, the
threshold rule and grid, the PR-AUC and its intervals. Anything that changes a request (shots,
prompt style, method, guard, data) needs a new run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import LocalevalError
from .mcq_options import MCQOptions
from .safety_options import SafeguardOptions

if TYPE_CHECKING:
    from .base import Task

# Options that act only on answers already given, by the Options of the kind of task that has
# them (the classes' own Options: ``rescore --help`` is built from this without importing them).
RESCORABLE: dict[type, tuple[str, ...]] = {
    MCQOptions: ("extract",),
    SafeguardOptions: ("sensitive", "threshold_rule", "threshold_grid", "auprc", "en_cell",
                       "calibrate_on", "on_failure", "n_resamples"),
}


def rescorable(kind: Any) -> tuple[str, ...]:
    """The options rescore may change of a task class or a registry ``TaskKind``."""
    return RESCORABLE.get(kind.Options, ())


def source_options(task_class: type[Task], config: dict, results: dict) -> dict[str, Any]:
    """The options the source run was made with, as ``make_task`` takes them."""
    if task_class.Options is MCQOptions:
        return _mcq_options(config)
    if task_class.Options is SafeguardOptions:
        return _safeguard_options(config, results)
    raise LocalevalError(f"rescore handles multiple-choice and safeguard runs; this one is "
                         f"task {config.get('task')!r}")


def _hub_or_path(data: Any) -> Any:
    return None if data is None or str(data).startswith("hf://") else data


def _mcq_options(c: dict) -> dict[str, Any]:
    prompt = c.get("prompt") or {}
    if c.get("reduce_few_shot"):
        raise LocalevalError("rescore cannot re-plan a run made with --reduce-few-shot: which "
                             "shots fit depended on the model's tokenizer, which rescore never "
                             "loads")
    options = {"data": _hub_or_path(c.get("data")), "dataset_revision": c.get("dataset_revision"),
               "subjects": c.get("subjects"), "limit": c.get("limit"), "method": c.get("method"),
               "prompt_style": prompt.get("style"), "shots": prompt.get("shots", 5),
               "cot": prompt.get("cot", False), "chat": prompt.get("chat", "none"),
               "system": prompt.get("system"),
               "lm_eval_choices": prompt.get("lm_eval_choices", "fixed"),
               "chat_special_tokens": c.get("chat_special_tokens", True),
               "permute_options": c.get("permute_options", 1), "repeats": c.get("repeats", 1)}
    if c.get("method") == "generation":  # the budget as run, so the requests key the cache
        options.update(max_tokens=c.get("max_tokens"), extract=c.get("extract"))
    return options


SAFEGUARD_KEYS = ("dataset_revision", "subsets", "langs", "limit", "classify", "sensitive",
                  "calibrate_on", "auprc", "en_cell", "threshold_rule", "threshold_grid",
                  "on_failure", "log_samples")


def _safeguard_options(c: dict, results: dict) -> dict[str, Any]:
    guard = c.get("guard") or {}
    options = {k: c[k] for k in SAFEGUARD_KEYS if k in c}
    options.update(data=_hub_or_path(c.get("data")), guard=guard.get("name", "zero-shot"),
                   guard_options=guard.get("options") or None)
    if results.get("n_resamples") is not None:
        options["n_resamples"] = results["n_resamples"]
    return options


def check_change(task_class: type[Task], base: dict[str, Any], name: str) -> None:
    """One line when an option that may change cannot act on this run."""
    if task_class.Options is MCQOptions and name == "extract" and base.get("method") != "generation":
        raise LocalevalError("--extract reads generated answers, and this run used --method "
                             f"{base.get('method')}: there is no text to extract from")
