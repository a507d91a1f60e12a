"""``evaluate_safety(...)``: a guard on a safety benchmark, end to end, into a run folder.

Flow: load SafetyItems -> the safeguard task plans samples -> the guard builds requests -> the
backend runs them through the request cache (:func:`localeval.api._execute`) -> verdicts ->
per-sample records -> analyses (Table 2, per-language table, gaps, pair types, scores,
thresholds, threshold transfer, bootstrap CIs) -> ``config.json``, ``results.json``,
``samples.jsonl``. :func:`compare_runs` reads two run folders back for the paper's Table 3.
"""

from __future__ import annotations

import math
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .analysis import gaps as G
from .analysis import safety as S
from .api import RunResult, _execute, run_provenance
from .backends.base import Backend, load_backend, parse_backend_spec
from .data.safety import (
    HUB_REPO,
    SafetyItem,
    load_labelled_prompts,
    load_seasafeguard_hub,
    load_seasafeguard_local,
    load_xstest_completions,
)
from .errors import LocalevalError
from .guards.base import get_guard
from .metrics.bootstrap import bootstrap_ci
from .metrics.classification import (
    average_precision,
    best_f1_threshold,
    confusion_at,
    roc_auc,
)
from .store.runs import load_run, save_run
from .tasks import safeguard
from .tasks.label_policy import describe_policy

RESULTS_SCHEMA = "localeval.safety/1"
SAFETY_TASKS = {  # task -> default classify
    "sea-safeguard": ("prompt", "response"),
    "safety-prompts": ("prompt",),
    "safety-responses": ("response",),
}
N_RESAMPLES = 1000
DEFAULT_THRESHOLD = 0.5
_SUFFIXES = (".csv", ".jsonl", ".json", ".parquet")


def load_safety_items(task: str, data: str | Path | None = None,
                      subsets: Sequence[str] | None = None, langs: Sequence[str] | None = None,
                      limit: int | None = None,
                      dataset_revision: str | None = None) -> list[SafetyItem]:
    """The task's items, filtered by subset and language, then cut by :func:`limit_items`."""
    if task not in SAFETY_TASKS:
        raise LocalevalError(f"unknown safety task {task!r}; use one of {', '.join(SAFETY_TASKS)}")
    if task == "sea-safeguard":
        if data is None or Path(data).is_dir():
            opts: dict[str, Any] = {"revision": dataset_revision,
                                    "repo": str(data) if data else HUB_REPO}
            if subsets:
                opts["subsets"] = subsets
            if langs:
                opts["langs"] = langs
            items = load_seasafeguard_hub(**opts)
        else:
            items = load_seasafeguard_local(data)
    elif data is None:
        what = "a prompt file (or folder of them)" if task == "safety-prompts" else \
            "the XSTest model_completions folder"
        raise LocalevalError(f"task {task} needs --data: {what}")
    elif task == "safety-prompts":
        path = Path(data)
        files = sorted(f for f in path.iterdir() if f.suffix in _SUFFIXES) if path.is_dir() \
            else [path]
        if not files:
            raise LocalevalError(f"no {', '.join(_SUFFIXES)} files in {path}")
        items = [i for f in files for i in load_labelled_prompts(f)]
    else:
        items = load_xstest_completions(data)
    if subsets:
        items = [i for i in items if i.subset in subsets]
    if langs:
        items = [i for i in items if i.lang in langs]
    if not items:
        raise LocalevalError(f"no {task} items left after the subset/language filters "
                             f"(subsets={subsets}, langs={langs})")
    return limit_items(items, limit)


def limit_items(items: list[SafetyItem], limit: int | None) -> list[SafetyItem]:
    """At most ``limit`` item ids per subset, each with all its language versions (so pairs stay
    whole). The ids are evenly spaced over the subset's ids in file order, id number
    ``floor(k * n / limit)`` for k = 0..limit-1, so that files sorted by label keep both."""
    if not limit:
        return items
    if limit < 0:
        raise LocalevalError(f"limit must be a positive number, not {limit}")
    order: dict[str, dict[str, None]] = {}
    for item in items:
        order.setdefault(item.subset, {})[item.id] = None
    keep = {(sub, ids[k * len(ids) // limit]) for sub, ids in
            ((s, list(d)) for s, d in order.items())
            for k in range(min(limit, len(ids)))}
    return [i for i in items if (i.subset, i.id) in keep]


def evaluate_safety(
    task: str,
    model: str | Backend,
    *,
    guard: str = "zero-shot",
    data: str | Path | None = None,
    subsets: Sequence[str] | None = None,
    langs: Sequence[str] | None = None,
    classify: Sequence[str] | None = None,
    sensitive: str | None = None,
    cultural_awareness: bool = False,
    output: str | Path | None = None,
    cache: str | Path | None = None,
    backend_options: dict | None = None,
    quiet: bool = False,
    command: list[str] | None = None,
    limit: int | None = None,
    guard_options: dict | None = None,
    dataset_revision: str | None = None,
    n_resamples: int = N_RESAMPLES,
    calibrate_on: str = "en",
) -> RunResult:
    """Evaluate a guard (``guard`` adapter on ``model``) on a safety task; write the run folder.

    ``task``: ``sea-safeguard`` (Hub, or ``data`` = a folder in the Hub layout or a file in
    :func:`load_seasafeguard_local`'s layout), ``safety-prompts`` (``data`` = labelled prompt
    file(s): XSTest CSV, multilingual JBB JSONL) or ``safety-responses`` (``data`` = the XSTest
    model_completions folder). ``classify``: any of prompt, response (with and without the
    prompt), response-with-prompt, response-without-prompt; None = the task's default.
    ``sensitive``: paper (default), safe, harmful or exclude (see tasks.label_policy).
    ``cultural_awareness``: tell the guard each item's country (zero-shot guard; items without
    a country are left out). ``limit``: at most N item ids per subset (all languages kept).
    ``n_resamples``: bootstrap resamples for the CIs (0: no CIs). ``calibrate_on``: the
    language whose best-F1 threshold is applied to every other language in
    ``threshold_transfer`` (see :func:`threshold_transfer`).
    """
    if isinstance(model, str):
        parse_backend_spec(model)
    classify = tuple(classify or SAFETY_TASKS.get(task, ()))
    kinds = safeguard.sample_kinds(classify)
    options = dict(guard_options or {})
    if cultural_awareness:
        options["cultural"] = True
    guard_obj = get_guard(guard, **options)
    items = load_safety_items(task, data, subsets, langs, limit, dataset_revision)
    warnings: list[str] = []
    if cultural_awareness:
        dropped = sum(1 for i in items if not i.country)
        items = [i for i in items if i.country]
        if not items:
            raise LocalevalError("cultural awareness needs items with a country (the cultural "
                                 "subsets of sea-safeguard); none of the selected items has one")
        if dropped:
            warnings.append(f"cultural awareness: {dropped} items without a country left out")
    planned = safeguard.plan(items, classify, guard_obj)
    for kind, context in kinds:
        if not any(p.kind == kind and p.context == context for p in planned):
            warnings.append(f"no {kind} samples ({context}): no selected item has a "
                            f"{'response' if kind == 'response' else 'prompt'}")
    if not planned:
        raise LocalevalError(f"nothing to classify: the {task} items have no responses; use "
                             "classify=('prompt',)")

    backend = load_backend(model, **(backend_options or {})) if isinstance(model, str) else model
    started = time.perf_counter()
    verdicts = safeguard.run_stages(guard_obj, planned,
                                    lambda reqs: _execute(backend, reqs, cache, quiet,
                                                                 unit="requests"))
    elapsed = time.perf_counter() - started
    model_name = str(backend.identity.get("model", ""))
    samples = [safeguard.record(p, v, guard=guard_obj.name, model=model_name,
                                sensitive=sensitive) for p, v in zip(planned, verdicts)]

    failed = [s for s in samples if s["score"] is None]
    if failed:
        reasons = Counter(s["error"].split(":")[0] for s in failed).most_common(3)
        warnings.append(f"{len(failed)} of {len(samples)} guard samples failed and are left "
                        f"out (never counted as safe); most common: "
                        + "; ".join(f"{r} ({n})" for r, n in reasons))
    for w in warnings:
        if not quiet:
            print(f"warning: {w}", file=sys.stderr)

    results = {
        "schema": RESULTS_SCHEMA,
        "task": task,
        "model": model_name,
        "guard": guard_obj.name,
        "classify": list(classify),
        "cultural_awareness": cultural_awareness,
        "label_policy": {kind: describe_policy(kind, sensitive) for kind in ("prompt", "response")
                         if any(k == kind for k, _ in kinds)},
        "sensitive": sensitive or "paper",
        "n_samples": len(samples),
        "n_failed": len(failed),
        "n_excluded": sum(1 for s in samples if s["label"] is None),
        "failures": [{k: s[k] for k in ("id", "lang", "subset", "kind", "context", "error")}
                     for s in failed[:50]],
        "warnings": warnings,
        **analyses(samples, n_resamples, calibrate_on),
        "timing": {"seconds": round(elapsed, 3),
                   "samples_per_second": round(len(samples) / elapsed, 3) if elapsed else None},
    }
    run_config = {
        **run_provenance(command),
        "task": task,
        "data": str(data) if data is not None else f"hf://{HUB_REPO}",
        "dataset_revision": dataset_revision,
        "subsets": sorted({i.subset for i in items}),
        "langs": sorted({i.lang for i in items}),
        "limit": limit,
        "classify": list(classify),
        "sensitive": sensitive or "paper",
        "cultural_awareness": cultural_awareness,
        "calibrate_on": calibrate_on,
        "guard": {"name": guard_obj.name, "options": options,
                  "template_source": guard_obj.template_source,
                  "verdict_position": guard_obj.verdict_position},
        "model": model if isinstance(model, str) else None,
        "backend": backend.identity,
    }
    results = _finite(results)
    folder = save_run(output, run_config, results, samples) if output else None
    return RunResult(run_config, results, samples, folder)


def analyses(samples: list[dict], n_resamples: int = N_RESAMPLES,
             calibrate_on: str = "en") -> dict[str, Any]:
    """Every analysis of the records, as stored under results.json's top level; 95% bootstrap
    CIs (seed 0) from ``n_resamples`` resamples, none when 0; thresholds tuned on the
    ``calibrate_on`` language for ``threshold_transfer``."""
    kinds = sorted({s["kind"] for s in samples})
    table = G.table2(samples)
    out: dict[str, Any] = {
        "table2": table,
        "table2_ci": G.table2_ci(samples, n_resamples) if n_resamples else {},
        "per_language": per_language(samples, n_resamples),
        "n_resamples": n_resamples,
        "language_gap": [dict(row, kind=kind, subset=sub) for kind in kinds
                         for sub in sorted({s["subset"] for s in samples if s["kind"] == kind})
                         for row in G.language_gap(samples, kind=kind, subset=sub,
                                                   n_resamples=n_resamples)],
        "cultural_gap": [r for r in G.cultural_gap(table) if r["gap"] is not None],
        "pair_type_confusion": [],
        "score_distribution": S.score_distribution(s for s in samples if s["raw_label"]),
        "threshold_sweep": [c for kind in kinds for c in S.threshold_curve(samples, kind)],
        "calibration": calibrate_on,
        "threshold_transfer": [b for kind in kinds
                               for b in threshold_transfer(samples, kind, calibrate_on)],
    }
    if "prompt" in kinds and "response" in kinds:
        for context in ("with_prompt", "without_prompt"):
            out["pair_type_confusion"] += [m for m in S.pair_type_confusion(samples, 0.5, context)
                                           if m["n"]]
    return out


def threshold_transfer(samples: list[dict], kind: str, calibrate_on: str = "en",
                       context: str = "with_prompt") -> list[dict[str, Any]]:
    """A threshold tuned on one language, applied to the others (paper Fig. 5 and §5.2).

    For each model: the best-F1 threshold (0.01..0.99, the lowest if tied) of the ``kind``
    samples in language ``calibrate_on`` (all subsets, this ``context``), then precision,
    recall, F1 and FPR of every *other* language at 0.5 (``default``) and at that threshold
    (``calibrated``). The calibration language is never reported, so no number comes from the
    data that chose its threshold. When the calibration language is absent or has one class
    only the block has ``threshold`` None, no ``languages`` and a ``note`` saying why.
    """
    mine = [s for s in samples if s["kind"] == kind and s.get("context", "with_prompt") == context]
    out = []
    for model in G._models(mine):
        rows = [s for s in mine if str(s.get("model", "")) == model]
        t, sc, failed, _ = G.scored(s for s in rows if s["lang"] == calibrate_on)
        block: dict[str, Any] = {"model": model, "kind": kind, "context": context,
                                 "calibrate_on": calibrate_on, "threshold": None,
                                 "default_threshold": DEFAULT_THRESHOLD,
                                 "n_calibration": len(t), "n_calibration_harmful": int(t.sum()),
                                 "note": None, "languages": []}
        others = sorted({s["lang"] for s in rows} - {calibrate_on})
        if not len(t):
            block["note"] = (f"skipped: no scored {kind} samples in the calibration language "
                             f"{calibrate_on!r}" + (f" ({failed} failed)" if failed else ""))
        elif t.min() == t.max():
            block["note"] = (f"skipped: the calibration language {calibrate_on!r} has only "
                             f"{'harmful' if t[0] else 'safe'} {kind} samples, so F1 cannot "
                             "choose a threshold")
        if block["note"]:
            out.append(block)
            continue
        threshold = best_f1_threshold(t, sc)
        block["threshold"] = threshold
        if not others:
            block["note"] = f"no language other than {calibrate_on!r} to apply the threshold to"
        for lang in others:
            lt, ls, lfailed, lexcluded = G.scored(s for s in rows if s["lang"] == lang)
            if not len(lt):
                continue
            block["languages"].append({
                "lang": lang, "n": len(lt), "n_harmful": int(lt.sum()), "n_failed": lfailed,
                "n_excluded": lexcluded,
                "default": confusion_at(lt, ls, DEFAULT_THRESHOLD),
                "calibrated": confusion_at(lt, ls, threshold)})
        out.append(block)
    return out


def compare_runs(baseline: str | Path, aware: str | Path) -> dict[str, Any]:
    """Paper Table 3 from two safety run folders: culture-aware minus plain AUPRC (points) per
    CG cell of Table 2 (:func:`analysis.gaps.cultural_awareness_delta` on their samples).

    LocalevalError when a folder is not a safety run, the runs differ in task, model, guard
    or label policy, the first is not the plain run and the second the culture-aware one, or
    their cultural-cg samples are not the same items.
    """
    runs = []
    for folder in (baseline, aware):
        try:
            config, results, samples = load_run(folder)
        except (OSError, ValueError) as e:
            raise LocalevalError(f"{folder} is not a run folder (needs config.json, "
                                 f"results.json, samples.jsonl): {e}") from None
        if results.get("schema") != RESULTS_SCHEMA:
            raise LocalevalError(f"{folder} is not a safety run (results.json schema "
                                 f"{results.get('schema')!r}, not {RESULTS_SCHEMA!r})")
        runs.append((config, results, samples))
    (_, rb, sb), (_, ra, sa) = runs
    for key in ("task", "model", "guard", "sensitive"):
        if rb.get(key) != ra.get(key):
            raise LocalevalError(f"the runs used different {key}s ({rb.get(key)!r} in "
                                 f"{baseline}, {ra.get(key)!r} in {aware}); compare one guard "
                                 "with and without cultural awareness")
    if rb.get("cultural_awareness") or not ra.get("cultural_awareness"):
        raise LocalevalError(f"compare needs the plain run first and the culture-aware run "
                             f"second; cultural_awareness is {rb.get('cultural_awareness')} in "
                             f"{baseline} and {ra.get('cultural_awareness')} in {aware}")

    def cg(samples: list[dict]) -> list[dict]:
        return [s for s in samples if s["subset"] == "cultural-cg"]

    def keys(samples: list[dict]) -> set[tuple]:
        return {(s["id"], s["lang"], s["kind"], s.get("context", "with_prompt"), s["label"])
                for s in samples}

    base, new = cg(sb), cg(sa)
    if not base or not new:
        raise LocalevalError("Table 3 is on the cultural-cg subset, and "
                             f"{baseline if not base else aware} has no cultural-cg samples")
    if keys(base) != keys(new):
        diff = len(keys(base) ^ keys(new))
        raise LocalevalError(f"the runs used different items: {diff} cultural-cg samples (id, "
                             "language, kind, context, label) are in only one of them")
    try:
        rows = G.cultural_awareness_delta(base, new)
    except ValueError as e:
        raise LocalevalError(f"malformed samples.jsonl: {e}") from None
    return {"task": rb["task"], "model": rb.get("model"), "guard": rb.get("guard"),
            "baseline": str(baseline), "aware": str(aware), "n_samples": len(base),
            "rows": _finite(rows)}


def per_language(samples: list[dict], n_resamples: int = N_RESAMPLES) -> list[dict[str, Any]]:
    """AUPRC (with a 95% bootstrap CI) and ROC AUC per kind, context, subset and language."""
    groups: dict[tuple, list[dict]] = {}
    for s in samples:
        groups.setdefault((s["kind"], s["context"], s["subset"], s["lang"]), []).append(s)
    rows = []
    for key in sorted(groups, key=lambda k: (k[0], k[1] != "with_prompt", k[2], k[3] != "en",
                                             k[3])):
        t, sc, failed, excluded = G.scored(groups[key])
        row: dict[str, Any] = dict(zip(("kind", "context", "subset", "lang"), key, strict=True))
        row.update(n=len(t), n_harmful=int(t.sum()), n_failed=failed, n_excluded=excluded,
                   auprc=math.nan, roc_auc=math.nan, low=math.nan, high=math.nan)
        if len(t):
            row.update(auprc=average_precision(t, sc), roc_auc=roc_auc(t, sc))
        if len(t) and n_resamples:
            ci = bootstrap_ci(average_precision, t, sc, n_resamples)
            row.update(low=ci["low"], high=ci["high"])
        rows.append(row)
    return rows


def _finite(value: Any) -> Any:
    """NaN and infinities become None (JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
