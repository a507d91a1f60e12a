"""The view of safeguard runs (sea-safeguard, safety-prompts, safety-responses): Table 2, the
per-language table, gaps, pair types, scores and thresholds; PR-AUC cards and the papers'
figures; leaderboard by Table 2 column; and two runs compared: the paper's Table 3 when the
second is the culture-aware run of the first, else B minus A PR-AUC per language with a paired
bootstrap."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ..analysis.gaps import cultural_awareness_delta
from ..errors import LocalevalError
from ..metrics.bootstrap import paired_bootstrap_ci
from ..metrics.classification import AUPRC_METRICS
from ..report.figures import SAFETY_FIGURES, Figure
from ..report.safety_tables import (
    SUBSET_SHORT,
    print_awareness_delta,
    print_safety_comparison,
    print_safety_report,
    safety_tables,
    table2_column_name,
    table2_column_order,
)
from ..store.runs import RunRecord, finite
from ..tasks.registry import view_for
from .base import Card, Metric, Ranking, ResultsView, Run, finished_run


class SafetyView(ResultsView):
    kind = "safety"

    def tables(self, results: dict) -> list[Table]:
        return safety_tables(results)[0]

    def print(self, results: dict, console: Console) -> None:
        print_safety_report(results, console)

    def cards(self, results: dict) -> list[Card]:
        cards = []
        for row in results.get("overall") or []:
            if row["subset"] == "all" and row.get("auprc") is not None:
                context = " (no prompt)" if row["context"] == "without_prompt" else ""
                cards.append((f"{100 * row['auprc']:.1f}", f"PR-AUC, {row['kind']}s{context}, "
                              f"n={row['n']}", False))
        return cards

    def figures(self, results: dict, folder: Path | None) -> list[Figure]:
        return [f for draw in SAFETY_FIGURES if (f := draw(results, folder)) is not None]

    def store_metrics(self, results: dict) -> list[Metric]:
        out = [(f"auprc/{r['kind']}/{r['context']}/{r['subset']}", r.get("auprc"), r.get("n"))
               for r in results.get("overall") or []]
        for row in (results.get("table2") or {}).get("rows", []):
            out += [(f"table2/{col}", value, None) for col, value in row["values"].items()]
        return out

    def ranking(self, names: list[str]) -> Ranking:
        table2 = sorted((n for n in names if n.startswith("table2/")),
                        key=lambda n: table2_column_order(n.removeprefix("table2/")))
        if table2:  # Table 2 cells are stored in points, as results.json's table2 has them
            return Ranking(table2, "table2/prompt/avg" if "table2/prompt/avg" in table2
                           else table2[0], scale=1.0, digits=1,
                           titles={n: table2_column_name(n.removeprefix("table2/"))
                                   for n in table2},
                           unit="PR-AUC points, the paper's Table 2 columns (Avg = mean of "
                                "the task's cells)")
        cols = [n for n in names if n.startswith("auprc/")]  # shares: printed as points
        return Ranking(cols, cols[0] if cols else None, digits=1,
                       titles={n: _overall_name(n) for n in cols},
                       unit="PR-AUC points, every language pooled")

    def compare(self, run_a: Run, run_b: Run) -> dict[str, Any]:
        a, b = safety_run(run_a), safety_run(run_b)
        if _awareness_pair(a.results, b.results):
            return compare_runs(a, b)  # the paper's Table 3
        return compare_safety_runs(a, b)

    def print_comparison(self, comparison: dict, console: Console) -> None:
        if "n_shared" in comparison:  # compare_safety_runs; compare_runs gives Table 3 rows
            print_safety_comparison(comparison, console)
        else:
            print_awareness_delta(comparison, console)


def _overall_name(metric: str) -> str:
    """``auprc/response/without_prompt/all`` as "Response (no prompt)"."""
    _, kind, context, subset = metric.split("/", 3)
    return (kind.capitalize() + (" (no prompt)" if context == "without_prompt" else "")
            + ("" if subset == "all" else f" {SUBSET_SHORT.get(subset, subset)}"))


def _awareness_pair(a: dict, b: dict) -> bool:
    """The plain run first and its culture-aware run second: the paper's Table 3."""
    return not a.get("cultural_awareness") and bool(b.get("cultural_awareness"))


def safety_run(run: Run) -> RunRecord:
    record = finished_run(run)
    if not isinstance(view_for(record.results), SafetyView):
        raise LocalevalError(f"{record.folder} is not a safety run (its results.json is a "
                             f"{view_for(record.results).kind} run's)")
    return record


def compare_runs(baseline: Run, aware: Run) -> dict[str, Any]:
    """Culture-aware minus plain AUPRC (points) per CG cell of Table 2
    (:func:`analysis.gaps.cultural_awareness_delta` on the two runs' samples).

    LocalevalError when a folder is not a finished safety run, the runs differ in task, model,
    guard or label policy, the first is not the plain run and the second the culture-aware
    one, or their cultural-cg samples are not the same items.
    """
    base_run, aware_run = safety_run(baseline), safety_run(aware)
    baseline, aware = base_run.folder, aware_run.folder
    rb, ra = base_run.results, aware_run.results
    for key in ("task", "model", "guard", "sensitive", "auprc", "en_cell"):
        if rb.get(key) != ra.get(key):
            raise LocalevalError(f"the runs used different {key}s ({rb.get(key)!r} in "
                                 f"{baseline}, {ra.get(key)!r} in {aware}); compare one guard "
                                 "with and without cultural awareness")
    if not _awareness_pair(rb, ra):
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
        # runs from before --auprc existed used average precision, before --en-cell pooled
        rows = cultural_awareness_delta(base, new, AUPRC_METRICS[rb.get("auprc", "ap")],
                                        en=rb.get("en_cell", "pooled"))
    except ValueError as e:
        raise LocalevalError(f"malformed samples.jsonl: {e}") from None
    return {"task": rb["task"], "model": rb.get("model"), "guard": rb.get("guard"),
            "auprc": rb.get("auprc", "ap"), "en_cell": rb.get("en_cell", "pooled"),
            "baseline": str(baseline), "aware": str(aware), "n_samples": len(base),
            "rows": finite(rows)}


def _cultural_cg(samples: list[dict]) -> list[dict]:
    return [s for s in samples if s["subset"] == "cultural-cg"]


def _keys(samples: list[dict]) -> set[tuple]:
    return {(s["id"], s["lang"], s["kind"], s.get("context", "with_prompt"), s["label"])
            for s in samples}


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
    a, b = safety_run(run_a), safety_run(run_b)
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
