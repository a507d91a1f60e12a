"""The view of safeguard runs (sea-safeguard, safety-prompts, safety-responses): Table 2, the
per-language table, gaps, pair types, scores and thresholds; PR-AUC cards and the papers'
figures; leaderboard by Table 2 column; and two runs compared: the paper's Table 3 when the
second is the culture-aware run of the first, else B minus A PR-AUC per language with a paired
bootstrap."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rich.text import Text as RichText

from ..analysis.gaps import cultural_awareness_delta
from ..data.safety import HUB_REPO
from ..errors import LocalevalError
from ..metrics.bootstrap import Metric as Scorer  # a metric of labels and scores
from ..metrics.bootstrap import paired_bootstrap_ci
from ..metrics.classification import auprc_metric
from ..records import finite, safety
from ..records.metric_names import MetricName, metric
from ..records.safety import AwarenessComparison, SafetyComparison, SafetyResults, Table2
from ..records.sample_kinds import Context, SampleKind
from ..records.samples import SafetySample
from ..render.figures import Figure
from ..render.table import DataTable
from ..store.runs import RunRecord
from ..tasks.base import SAFEGUARD_PROTOCOL
from ..tasks.run_spec import RunSpec
from ..tasks.safety_options import SafeguardOptions
from .base import (
    Card,
    Metric,
    Ranking,
    ResultsView,
    Run,
    distinct_names,
    finished_run,
    of_kind,
    with_sample_fields,
)
from .d5_tables import d5_tables
from .safety_figures import SAFETY_FIGURES, comparison_figure
from .safety_tables import (
    SUBSET_SHORT,
    awareness_delta_table,
    per_language_runs_table,
    safety_comparison_table,
    safety_notes,
    safety_tables,
    table2_column_name,
    table2_column_order,
    table2_tables,
)
from .severity_tables import severity_table


class SafetyView(ResultsView[SafetyResults]):
    kind = "safety"
    schema = safety.SCHEMA
    Results = SafetyResults
    Options = SafeguardOptions
    compares = True

    def tables(self, results: SafetyResults) -> list[DataTable]:
        """Every table, App. D.5's F1 and FPR and the severity table after the per-language
        table (which follows the headline: the overall table and Table 2's)."""
        tables = safety_tables(results)
        at = self.headline(results) + 1
        severity = severity_table(results)
        return [*tables[:at], *d5_tables(results), *([severity] if severity else []),
                *tables[at:]]

    def headline(self, results: SafetyResults) -> int:
        """Overall, then the paper's Table 2 (a table per task) where the run has it."""
        return (1 if results.overall else 0) + len(table2_tables(results))

    def notes(self, results: SafetyResults) -> list[RichText]:
        return safety_notes(results)

    def cards(self, results: SafetyResults) -> list[Card]:
        """Table 2's Avg per task first (the paper's headline), then PR-AUC with every
        language and subset pooled, each saying which it is."""
        cards = _table2_cards(results.table2)
        for row in results.overall:
            if row.subset == "all" and row.auprc is not None:
                context = Context(row.context).suffix
                cards.append(Card(f"{100 * row.auprc:.1f}", f"PR-AUC, {row.kind}s{context}, "
                                  f"every language and subset pooled, n={row.n}"))
        return cards

    def figures(self, results: SafetyResults, folder: Path | None) -> list[Figure]:
        return [f for draw in SAFETY_FIGURES if (f := draw(results, folder)) is not None]

    def store_metrics(self, results: SafetyResults) -> list[Metric]:
        out: list[Metric] = [(metric("auprc", r.kind, r.context, r.subset), r.auprc, r.n)
                             for r in results.overall]
        for row in results.table2.rows if results.table2 else []:
            out += [(MetricName("table2", tuple(col.split("/"))), value, None)
                    for col, value in row.values.items()]
        return out

    def ranking(self, names: list[str]) -> Ranking:
        keys = {n: MetricName.parse(n) for n in names}
        table2 = sorted((n for n, key in keys.items() if key.family == "table2"),
                        key=lambda n: table2_column_order(keys[n].rest))
        headline = str(metric("table2", "prompt", "avg"))
        if table2:  # Table 2 cells are stored in points, as results.json's table2 has them
            return Ranking(table2, headline if headline in table2 else table2[0], scale=1.0,
                           digits=1, bounds=(0.0, 100.0),
                           titles={n: table2_column_name(keys[n].rest) for n in table2},
                           unit="PR-AUC points, the paper's Table 2 columns (Avg = mean of "
                                "the task's cells)")
        cols = [n for n, key in keys.items() if key.family == "auprc"]  # shares: as points
        return Ranking(cols, cols[0] if cols else None, digits=1,
                       titles={n: _overall_name(n) for n in cols},
                       unit="PR-AUC points, every language pooled")

    def paper_protocol(self, task: str) -> dict[str, str] | None:
        """SEA-SafeguardBench's: the facts of the run of its paper protocol
        (:meth:`RunSpec.paper`: the defaults, every subset and language of the Hub's data, the
        guard read where its authors read it)."""
        if task != "sea-safeguard":
            return None
        return RunSpec.paper(task, SAFEGUARD_PROTOCOL, f"hf://{HUB_REPO}").protocol_facts()

    def compare(self, run_a: Run, run_b: Run) -> AwarenessComparison | SafetyComparison:
        a, b = safety_run(run_a), safety_run(run_b)
        if _awareness_pair(a.results, b.results):
            return compare_runs(a, b)  # the paper's Table 3
        return compare_safety_runs(a, b)

    def comparison_tables(self, comparison: AwarenessComparison | SafetyComparison
                          ) -> list[DataTable]:
        if isinstance(comparison, SafetyComparison):
            return [safety_comparison_table(comparison)]
        return [awareness_delta_table(comparison)]

    def comparison_figures(self, comparison: AwarenessComparison | SafetyComparison,
                           labels: tuple[str, str], folder: Path | None) -> list[Figure]:
        if not isinstance(comparison, SafetyComparison):
            return []
        figure = comparison_figure(comparison, labels, folder)
        return [figure] if figure is not None else []

    def comparison_notes(self, comparison: AwarenessComparison | SafetyComparison) -> list[str]:
        if isinstance(comparison, SafetyComparison):
            return [f"A: {comparison.a} ({comparison.name_a})",
                    f"B: {comparison.b} ({comparison.name_b}); "
                    f"{comparison.n_shared} shared samples"]
        return [f"plain: {comparison.baseline} ({comparison.name_a})",
                f"aware: {comparison.aware} ({comparison.name_b})"]

    def side_by_side(self, runs: list[tuple[str, SafetyResults]],
                     folder: Path | None) -> list[DataTable | Figure]:
        """PR-AUC per task, subset and language, run by run."""
        if len(runs) < 2:
            return []
        table = per_language_runs_table(runs)
        return [table] if table is not None else []


def _table2_cards(table2: Table2 | None) -> list[Card]:
    """Table 2's Avg per task of its first row, each saying how many cells it averages."""
    if table2 is None or not table2.rows:
        return []
    row, cards = table2.rows[0], []
    for kind in dict.fromkeys(c.split("/")[0] for c in table2.columns):
        cells = [v for c, v in row.values.items() if c.startswith(f"{kind}/")
                 and c != f"{kind}/avg" and v is not None]
        if row.values.get(f"{kind}/avg") is not None:
            cards.append(Card(f"{row.values[f'{kind}/avg']:.1f}", f"Table 2 Avg, "
                              f"{kind}s: the mean of its {len(cells)} cells"))
    return cards


def _overall_name(name: str) -> str:
    """``auprc/response/without_prompt/all`` as "Response (no prompt)"."""
    kind, context, subset = MetricName.parse(name).parts
    return (kind.capitalize() + Context(context).suffix
            + ("" if subset == "all" else f" {SUBSET_SHORT.get(subset, subset)}"))


def _awareness_pair(a: SafetyResults, b: SafetyResults) -> bool:
    """The plain run first and its culture-aware run second: the paper's Table 3."""
    return not a.cultural_awareness and b.cultural_awareness


def safety_run(run: Run) -> RunRecord[SafetyResults, SafetySample]:
    """A finished safety run whose samples have what a comparison reads, samples typed."""
    record = with_sample_fields(of_kind(finished_run(run), SafetyResults, "a safety run"),
                                ("id", "lang", "kind", "label"))
    samples = [s for s in record.samples if isinstance(s, SafetySample)]
    if len(samples) != len(record.samples):  # a run kept in memory with other samples
        raise LocalevalError(f"{record.folder or 'the run'}: its samples are not safety samples")
    return RunRecord(config=record.config, results=record.results, samples=samples,
                     folder=record.folder, started_at=record.started_at,
                     finished_at=record.finished_at)


def compare_runs(baseline: Run, aware: Run) -> AwarenessComparison:
    """Culture-aware minus plain AUPRC (points) per CG cell of Table 2
    (:func:`analysis.gaps.cultural_awareness_delta` on the two runs' samples).

    LocalevalError when a folder is not a finished safety run, the runs differ in task, model,
    guard or label policy, the first is not the plain run and the second the culture-aware
    one, or their cultural-cg samples are not the same items.
    """
    base_run, aware_run = safety_run(baseline), safety_run(aware)
    base_dir, aware_dir = base_run.folder, aware_run.folder
    rb, ra = base_run.results, aware_run.results
    for key, b, a in (("task", rb.task, ra.task), ("model", rb.model, ra.model),
                      ("guard", rb.guard, ra.guard), ("sensitive", rb.sensitive, ra.sensitive),
                      ("auprc", rb.auprc, ra.auprc), ("en_cell", rb.en_cell, ra.en_cell),
                      ("one_class", rb.one_class, ra.one_class)):
        if b != a:
            raise LocalevalError(f"the runs used different {key}s ({b!r} in {base_dir}, "
                                 f"{a!r} in {aware_dir}); compare one guard with and without "
                                 "cultural awareness")
    if not _awareness_pair(rb, ra):
        raise LocalevalError(f"compare needs the plain run first and the culture-aware run "
                             f"second; cultural_awareness is {rb.cultural_awareness} in "
                             f"{base_dir} and {ra.cultural_awareness} in {aware_dir}")
    base, new = _cultural_cg(base_run.samples), _cultural_cg(aware_run.samples)
    if not base or not new:
        raise LocalevalError("Table 3 is on the cultural-cg subset, and "
                             f"{base_dir if not base else aware_dir} has no cultural-cg "
                             "samples")
    if _keys(base) != _keys(new):
        diff = len(_keys(base) ^ _keys(new))
        raise LocalevalError(f"the runs used different items: {diff} cultural-cg samples (id, "
                             "language, kind, context, label) are in only one of them")
    try:
        # runs from before --auprc existed used average precision, before --en-cell pooled
        # (the records' defaults)
        rows = cultural_awareness_delta(base, new, auprc_metric(rb.auprc, rb.one_class),
                                        en=rb.en_cell)
    except ValueError as e:
        raise LocalevalError(f"malformed samples.jsonl: {e}") from None
    name_a, name_b = distinct_names([base_run, aware_run])
    return AwarenessComparison.model_validate(finite({
        "name_a": name_a, "name_b": name_b, "task": rb.task, "model": rb.model, "guard": rb.guard, "auprc": rb.auprc,
        "en_cell": rb.en_cell, "baseline": str(base_dir), "aware": str(aware_dir),
        "n_samples": len(base), "rows": rows}))


def _cultural_cg(samples: Sequence[SafetySample]) -> list[SafetySample]:
    return [s for s in samples if s.subset == "cultural-cg"]


# a sample by its item, language, task and context (and gold label: _keys)
_SampleKey = tuple[str | int, str, SampleKind, Context]


def _keys(samples: Sequence[SafetySample]) -> set[tuple[str | int, str, SampleKind, Context,
                                                        int | None]]:
    return {(s.id, s.lang, s.kind, s.context, s.label) for s in samples}


def _scored(samples: Sequence[SafetySample]) -> dict[_SampleKey, SafetySample]:
    return {(s.id, s.lang, s.kind, s.context): s
            for s in samples if s.score is not None and s.label is not None}


def _paired_auprc(pairs: list[tuple[SafetySample, SafetySample]], metric: Scorer,
                  n_resamples: int) -> dict[str, Any]:
    labels: list[int] = []
    scores_a: list[float] = []
    scores_b: list[float] = []
    for a, b in pairs:  # every pair: _scored keeps samples with a label and a score
        if a.label is not None and a.score is not None and b.score is not None:
            labels.append(a.label)
            scores_a.append(a.score)
            scores_b.append(b.score)
    row: dict[str, Any] = {"n": len(pairs), "n_harmful": sum(labels)}
    if len(set(labels)) < 2:
        return {**row, "note": "one class only: no PR-AUC"}
    t, a_scores, b_scores = np.asarray(labels), np.asarray(scores_a), np.asarray(scores_b)
    ci = paired_bootstrap_ci(metric, t, b_scores, t, a_scores, n_resamples=n_resamples)
    return {**row, "auprc_a": float(metric(t, a_scores)),
            "auprc_b": float(metric(t, b_scores)),
            "diff": ci["estimate"], "low": ci["low"], "high": ci["high"]}


def compare_safety_runs(run_a: Run, run_b: Run,
                        n_resamples: int = 1000) -> SafetyComparison:
    """B minus A PR-AUC per task, context and language (and all languages pooled), on the
    samples both runs scored with the same label, with a paired bootstrap 95% CI (the same
    items resampled on both sides)."""
    a, b = safety_run(run_a), safety_run(run_b)
    dir_a, dir_b = a.folder, b.folder
    if a.results.sensitive != b.results.sensitive:
        raise LocalevalError("the runs used different label policies (--sensitive); their "
                             "labels are not comparable")
    metric = auprc_metric(a.results.auprc, a.results.one_class)
    theirs = _scored(b.samples)
    pairs = [(s, theirs[k]) for k, s in _scored(a.samples).items()
             if k in theirs and theirs[k].label == s.label]
    if not pairs:
        raise LocalevalError(f"{dir_a} and {dir_b} share no scored sample")
    groups: dict[tuple[SampleKind, Context, str], list[tuple[SafetySample, SafetySample]]] = {}
    for pair in pairs:
        s = pair[0]
        for lang in ("all", s.lang):
            groups.setdefault((s.kind, s.context, lang), []).append(pair)
    rows = [{"kind": k, "context": c, "lang": lang, **_paired_auprc(g, metric, n_resamples)}
            for (k, c, lang), g in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1],
                                                                           kv[0][2] != "all",
                                                                           kv[0][2]))]
    name_a, name_b = distinct_names([a, b])
    return SafetyComparison.model_validate(finite({
        "a": str(dir_a), "b": str(dir_b), "name_a": name_a, "name_b": name_b, "guard_a": a.results.guard,
        "guard_b": b.results.guard, "model_a": a.results.model, "model_b": b.results.model,
        "auprc": a.results.auprc, "n_shared": len(pairs), "rows": rows}))
