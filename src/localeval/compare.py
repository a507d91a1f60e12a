"""Two runs side by side: ``compare_runs(plain, aware)`` is the paper's Table 3 from two
safeguard run folders; ``compare_safety_runs(a, b)`` any two safeguard runs, per language, with
a paired bootstrap; ``compare_mcq_runs(a, b)`` two multiple-choice runs per subject on the
questions both answered, with an exact McNemar test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .analysis.gaps import cultural_awareness_delta
from .errors import LocalevalError
from .metrics.bootstrap import paired_bootstrap_ci
from .metrics.classification import AUPRC_METRICS
from .metrics.paired import mcnemar_exact
from .run import finite
from .store.runs import RunRecord, load_run
from .tasks.safeguard import SafeguardTask

SAFETY_SCHEMA = SafeguardTask.results_schema
Run = str | Path | RunRecord  # a run folder, or its record already loaded


def compare_runs(baseline: Run, aware: Run) -> dict[str, Any]:
    """Culture-aware minus plain AUPRC (points) per CG cell of Table 2
    (:func:`analysis.gaps.cultural_awareness_delta` on the two runs' samples).

    LocalevalError when a folder is not a finished safety run, the runs differ in task, model,
    guard or label policy, the first is not the plain run and the second the culture-aware
    one, or their cultural-cg samples are not the same items.
    """
    base_run, aware_run = _safety_run(baseline), _safety_run(aware)
    baseline, aware = base_run.folder, aware_run.folder
    rb, ra = base_run.results, aware_run.results
    for key in ("task", "model", "guard", "sensitive", "auprc"):
        if rb.get(key) != ra.get(key):
            raise LocalevalError(f"the runs used different {key}s ({rb.get(key)!r} in "
                                 f"{baseline}, {ra.get(key)!r} in {aware}); compare one guard "
                                 "with and without cultural awareness")
    if rb.get("cultural_awareness") or not ra.get("cultural_awareness"):
        raise LocalevalError(f"compare needs the plain run first and the culture-aware run "
                             f"second; cultural_awareness is {rb.get('cultural_awareness')} in "
                             f"{baseline} and {ra.get('cultural_awareness')} in {aware}")
    base, new = _cultural_cg(base_run.samples), _cultural_cg(aware_run.samples)
    if not base or not new:
        raise LocalevalError("Table 3 is on the cultural-cg subset, and "
                             f"{baseline if not base else aware} has no cultural-cg samples")
    if _keys(base) != _keys(new):
        diff = len(_keys(base) ^ _keys(new))
        raise LocalevalError(f"the runs used different items: {diff} cultural-cg samples (id, "
                             "language, kind, context, label) are in only one of them")
    try:
        # runs from before --auprc existed used average precision
        rows = cultural_awareness_delta(base, new, AUPRC_METRICS[rb.get("auprc", "ap")])
    except ValueError as e:
        raise LocalevalError(f"malformed samples.jsonl: {e}") from None
    return {"task": rb["task"], "model": rb.get("model"), "guard": rb.get("guard"),
            "auprc": rb.get("auprc", "ap"),
            "baseline": str(baseline), "aware": str(aware), "n_samples": len(base),
            "rows": finite(rows)}


def _safety_run(run: Run) -> RunRecord:
    record = _finished(run)
    schema = record.results.get("schema")
    if schema != SAFETY_SCHEMA:
        raise LocalevalError(f"{record.folder} is not a safety run (results.json schema "
                             f"{schema!r}, not {SAFETY_SCHEMA!r})")
    return record


def _cultural_cg(samples: list[dict]) -> list[dict]:
    return [s for s in samples if s["subset"] == "cultural-cg"]


def _keys(samples: list[dict]) -> set[tuple]:
    return {(s["id"], s["lang"], s["kind"], s.get("context", "with_prompt"), s["label"])
            for s in samples}


def _finished(run: Run) -> RunRecord:
    """A finished run: a folder is read once; a record already read is used as it is."""
    record = run if isinstance(run, RunRecord) else load_run(run)
    if record.status != "finished":
        raise LocalevalError(f"{record.folder} has not finished (status {record.status!r}"
                             + (f": {record.error}" if record.error else "") + ")")
    return record


def _paired(pairs: list[tuple[dict, dict]]) -> dict[str, Any]:
    n = len(pairs)
    a_right = sum(bool(a["correct"]) for a, _ in pairs)
    b_right = sum(bool(b["correct"]) for _, b in pairs)
    a_only = sum(bool(a["correct"]) and not b["correct"] for a, b in pairs)
    b_only = sum(bool(b["correct"]) and not a["correct"] for a, b in pairs)
    return {"n": n, "acc_a": a_right / n, "acc_b": b_right / n, "diff": (b_right - a_right) / n,
            "a_only": a_only, "b_only": b_only, "p_mcnemar": mcnemar_exact(a_only, b_only)}


def compare_mcq_runs(run_a: Run, run_b: Run) -> dict[str, Any]:
    """B minus A accuracy overall and per subject, on the questions both runs answered (failed
    requests left out), with the exact McNemar p-value of each difference."""
    a, b = _finished(run_a), _finished(run_b)
    run_a, run_b = a.folder, b.folder
    for record, folder in ((a, run_a), (b, run_b)):
        if not str(record.results.get("schema", "")).startswith("localeval.mcq/"):
            raise LocalevalError(f"{folder} is not a multiple-choice run")
    theirs = {s["id"]: s for s in b.samples if s.get("correct") is not None}
    pairs = [(s, theirs[s["id"]]) for s in a.samples
             if s.get("correct") is not None and s["id"] in theirs]
    if not pairs:
        raise LocalevalError(f"{run_a} and {run_b} share no answered question (same task and "
                             "data?)")
    subjects: dict[str, list] = {}
    for pair in pairs:
        subjects.setdefault(pair[0]["subject"], []).append(pair)
    return {"a": str(run_a), "b": str(run_b), "model_a": a.results.get("model"),
            "model_b": b.results.get("model"), "task": a.results.get("task"),
            "n_only_a": len(a.samples) - len(pairs), "n_only_b": len(b.samples) - len(pairs),
            "overall": _paired(pairs),
            "by_subject": {name: _paired(group) for name, group in sorted(subjects.items())}}


def _scored(samples: list[dict]) -> dict[tuple, dict]:
    return {(s["id"], s["lang"], s["kind"], s.get("context", "with_prompt")): s
            for s in samples if s.get("score") is not None and s.get("label") is not None}


def _paired_auprc(pairs: list[tuple[dict, dict]], metric, n_resamples: int) -> dict[str, Any]:
    labels = [a["label"] for a, _ in pairs]
    row: dict[str, Any] = {"n": len(pairs), "n_harmful": sum(labels)}
    if len(set(labels)) < 2:
        return {**row, "note": "one class only: no PR-AUC"}
    ci = paired_bootstrap_ci(metric, labels, [b["score"] for _, b in pairs], labels,
                             [a["score"] for a, _ in pairs], n_resamples=n_resamples)
    return {**row, "auprc_a": float(metric(labels, [a["score"] for a, _ in pairs])),
            "auprc_b": float(metric(labels, [b["score"] for _, b in pairs])),
            "diff": ci["estimate"], "low": ci["low"], "high": ci["high"]}


def compare_safety_runs(run_a: Run, run_b: Run,
                        n_resamples: int = 1000) -> dict[str, Any]:
    """B minus A PR-AUC per task, context and language (and all languages pooled), on the
    samples both runs scored with the same label, with a paired bootstrap 95% CI (the same
    items resampled on both sides)."""
    a, b = _safety_run(run_a), _safety_run(run_b)
    run_a, run_b = a.folder, b.folder
    if a.results.get("sensitive") != b.results.get("sensitive"):
        raise LocalevalError("the runs used different label policies (--sensitive); their "
                             "labels are not comparable")
    metric = AUPRC_METRICS[a.results.get("auprc", "ap")]
    theirs = _scored(b.samples)
    pairs = [(s, theirs[k]) for k, s in _scored(a.samples).items()
             if k in theirs and theirs[k]["label"] == s["label"]]
    if not pairs:
        raise LocalevalError(f"{run_a} and {run_b} share no scored sample")
    groups: dict[tuple, list] = {}
    for pair in pairs:
        s = pair[0]
        for lang in ("all", s["lang"]):
            groups.setdefault((s["kind"], s.get("context", "with_prompt"), lang), []).append(pair)
    rows = [{"kind": k, "context": c, "lang": lang, **_paired_auprc(g, metric, n_resamples)}
            for (k, c, lang), g in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1],
                                                                           kv[0][2] != "all",
                                                                           kv[0][2]))]
    return {"a": str(run_a), "b": str(run_b), "guard_a": a.results.get("guard"),
            "guard_b": b.results.get("guard"), "auprc": a.results.get("auprc", "ap"),
            "n_shared": len(pairs), "rows": finite(rows)}
