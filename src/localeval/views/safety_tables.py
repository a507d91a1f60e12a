"""Tables of a safeguard run, built from its typed results: Table 2, the overall and per-language
PR-AUC, the gaps, pair types (Fig. 4) and score distributions (Fig. 6); the threshold tables are
in :mod:`.threshold_tables`. They only read results; they never recompute a number."""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text as RichText

from ..records.safety import (
    AUPRCRow,
    AwarenessComparison,
    Bounds,
    SafetyComparison,
    SafetyResults,
    Table2,
    Table2Row,
)
from ..records.sample_kinds import Context, task_name
from ..render.cells import short_model as _model
from ..render.table import Cell, DataTable, Interval, Number, Spark, TableBuilder, columns
from .threshold_tables import threshold_sweep_table, threshold_transfer_table, transfer_notes

SUBSET_SHORT = {"general": "General", "cultural-itw": "ITW", "cultural-cg": "CG"}


# How each PR-AUC estimator is named in titles (results' auprc; runs without it used AP), and
# in columns: one name per estimator (issue 69: "AUPRC" named both the trapezoid and AP).
AUPRC_NAMES = {"trapezoid": "PR-AUC (trapezoid, the paper's)", "ap": "AP (average precision)"}
AUPRC_SHORT = {"trapezoid": "PR-AUC", "ap": "AP"}


WARNED = "⚠"  # beside a number that says nothing; the caption says why


def auprc_name(estimator: str) -> str:
    return AUPRC_NAMES.get(estimator, "PR-AUC")


def auprc_short(estimator: str) -> str:
    return AUPRC_SHORT.get(estimator, "PR-AUC")


def table2_tables(results: SafetyResults) -> list[DataTable]:
    """The paper's Table 2 layout (AUPRC points), one table per task (prompt, response) so it
    fits a terminal; empty when no cell has a value."""
    t2 = results.table2
    if t2 is None or not any(v is not None for row in t2.rows for v in row.values.values()):
        return []
    by_kind = {kind: [c for c in t2.columns if c.startswith(kind + "/")]
               for kind in dict.fromkeys(c.split("/")[0] for c in t2.columns)}
    return [_table2_task(results, t2, kind, cols) for kind, cols in by_kind.items()
            if _has_samples(t2, cols)]


def _has_samples(t2: Table2, cols: list[str]) -> bool:
    """Whether the run classified this task at all: a value or a failed sample in one of its
    cells (a prompt-only guard's response table, every cell "-", is not printed: issue 69)."""
    return any(row.values.get(c) is not None or row.n_failed.get(c) for row in t2.rows
               for c in cols)


def _table2_column(col: str) -> str:
    _, *rest = col.split("/")
    return "Avg" if rest == ["avg"] else f"{SUBSET_SHORT.get(rest[0], rest[0])}\n{rest[1].upper()}"


def table2_column_name(col: str) -> str:
    """A Table 2 column (``prompt/cultural-cg/en``) as the paper heads it, with its task:
    "Prompt CG EN", "Response Avg"."""
    kind = col.split("/")[0]
    return f"{kind.capitalize()} {_table2_column(col).replace(chr(10), ' ')}"


TABLE2_ORDER = ("general", "cultural-itw", "cultural-cg")  # the paper's column order


def table2_column_order(col: str) -> tuple[bool, str, int, str, bool]:
    """Sort key of Table 2 columns in the paper's order: prompt before response; General,
    ITW, CG (then any other subset); EN before SEA; each task's Avg last."""
    kind, *rest = col.split("/")
    if rest == ["avg"]:
        return (kind != "prompt", kind, len(TABLE2_ORDER) + 1, "", False)
    subset = TABLE2_ORDER.index(rest[0]) if rest[0] in TABLE2_ORDER else len(TABLE2_ORDER)
    return (kind != "prompt", kind, subset, rest[0], rest[-1] != "en")


def _table2_task(results: SafetyResults, t2: Table2, kind: str, cols: list[str]) -> DataTable:
    table = TableBuilder(f"{results.task} · guard {results.guard} · {kind} classification · "
                         f"{auprc_name(results.auprc)} (Table 2 layout)",
                         columns("Model", *(_table2_column(c) for c in cols)))
    for row in t2.rows:
        _add_table2_row(table, row, results.table2_ci.get(row.model), cols)
    failed = [f"{_model(r.model)}: {n} failed samples left out" for r in t2.rows
              if (n := sum(v for c, v in r.n_failed.items() if c in cols))]
    en = "mean over countries" if t2.en == "per-country" else "pooled over countries"
    aware = (" Culture-aware run (the paper's Table 3 setting): items without a country, the "
             "whole General subset, are left out, so its cells and Avg are empty."
             if results.cultural_awareness else "")
    table.caption = (f"SEA = {t2.sea} mean over local languages; cultural EN = {en}; Avg = "
                     "mean of the row's cells" + ("; the response is judged with its prompt."
                                                  if kind == "response" else ".")
                     + "".join(f" {line}." for line in failed) + aware
                     + _table2_warnings(t2.rows, cols))
    return table.build()


def _add_table2_row(table: TableBuilder, row: Table2Row, ci: dict[str, Bounds] | None,
                    cols: list[str]) -> None:
    """A model's cells (⚠ where a cell's PR-AUC says nothing), then the half-width of each
    cell's 95% bootstrap interval under it."""
    table.add(_model(row.model), *(Number(row.values.get(c), note=WARNED if
                                          row.warnings.get(c) else "") for c in cols))
    if ci:
        table.add("95% CI ±", *(Number((ci[c].high - ci[c].low) / 2) if c in ci
                                else Number(None) for c in cols), level=1)


def _table2_warnings(rows: Iterable[Table2Row], cols: list[str]) -> str:
    # a cell's name holds no line break (its header's "CG\nEN") and never breaks at the end of
    # a line: its words are joined by no-break spaces (issue 69)
    return _warned_where((f"{_model(r.model)}\u00a0{_table2_column(c)}".replace("\n", "\u00a0"),
                          group, reason)
                         for r in rows for c, groups in r.warnings.items() if c in cols
                         for group, reason in groups.items())


def _task_name(r: AUPRCRow) -> str:
    return task_name(r.kind, r.context)


def _row_cells(r: AUPRCRow, lang: bool = True) -> list[Cell | str | int | None]:
    """task, subset, (lang,) n, harmful, AUPRC, CI, ROC AUC, failed of an AUPRC row."""
    return [_task_name(r), SUBSET_SHORT.get(r.subset, r.subset), *([r.lang] if lang else []),
            r.n, r.n_harmful, Number(r.auprc, scale=100, note=WARNED if r.warning else ""),
            Interval(r.low, r.high),
            Number(r.roc_auc, scale=100), r.n_failed]


def overall_table(results: SafetyResults) -> DataTable | None:
    """The headline: PR-AUC per task over everything, then per subset (file, source model)."""
    if not results.overall:
        return None
    table = TableBuilder(f"Overall · {auprc_name(results.auprc)} % [95% CI] · ROC AUC %",
                         columns("task", "subset", "n", "harmful", auprc_short(results.auprc),
                                 "95% CI", "ROC AUC", "failed", text=2))
    for r in results.overall:
        table.add(*_row_cells(r, lang=False))
    table.caption = _warnings_caption(results.overall)
    return table.build()


def _warnings_caption(rows: list[AUPRCRow]) -> str:
    """Each PR-AUC that says nothing, named, with why (:func:`metrics.classification.
    ranking_problem`)."""
    return _warned_where((f"{_task_name(r)} {SUBSET_SHORT.get(r.subset, r.subset)}", r.lang,
                          r.warning) for r in rows if r.warning).strip()


def _warned_where(found: Iterable[tuple[str, str, str]]) -> str:
    """`` ⚠ reason: where (groups), where.`` once per reason, from (where, group, reason)."""
    by_reason: dict[str, dict[str, list[str]]] = {}
    for where, group, reason in found:
        by_reason.setdefault(reason, {}).setdefault(where, [])
        if group:
            by_reason[reason][where].append(group)
    return "".join(f" {WARNED} {reason}: " + ", ".join(
        w + (f" ({', '.join(groups)})" if groups else "") for w, groups in places.items()) + "."
        for reason, places in by_reason.items())


def per_language_table(results: SafetyResults,
                       contexts: tuple[str, ...] = tuple(Context)) -> DataTable:
    """AUPRC with its 95% bootstrap CI, ROC AUC and counts per kind, context, subset, language
    (rows of the given response ``contexts``)."""
    table = TableBuilder(f"Per language · {auprc_name(results.auprc)} % [95% CI] · ROC AUC %",
                         columns("task", "subset", "lang", "n", "harmful",
                                 auprc_short(results.auprc), "95% CI", "ROC AUC", "failed",
                                 "excluded", text=3))
    shown = [r for r in results.per_language if r.context in contexts]
    for r in shown:
        table.add(*_row_cells(r), r.n_excluded)
    table.caption = _warnings_caption(shown)
    return table.build()


# SEA-SafeguardBench §4's average gaps are not the means of its own Table 2 (issue 50 item 7):
# worked from the table's printed cells (24 guards with prompt cells, 20 with response cells)
PAPER_LANGUAGE_GAP_NOTE = (
    "The paper's §4 averages do not follow from its Table 2: the mean EN − SEA of its guards' "
    "cells is 5.45 / 6.12 / 5.59 (prompts: General / ITW / CG) against the text's "
    "5.7 / 6.1 / 5.4, and 5.29 / 5.38 (responses: General / CG) against 5.7 / 5.8.")
PAPER_CULTURAL_GAP_NOTE = (
    "The paper's §4 averages do not follow from its Table 2: the mean General − CG of its "
    "guards' cells is 36.22 / 36.36 (prompts: EN / SEA) against the text's 36.4 / 36.2, and "
    "21.13 / 21.22 (responses) against 21.0 / 21.2.")


def table2_gap_table(results: SafetyResults) -> DataTable | None:
    """The paper's language gap: EN cell minus SEA cell of Table 2, per task and subset."""
    rows = results.table2_language_gap
    if not rows:
        return None
    multi = len({r.model for r in rows}) > 1
    table = TableBuilder("Language gap (the paper's) · Table 2 EN − SEA cells · points",
                         columns(*(["model"] if multi else []), "task", "subset", "EN", "SEA",
                                 "EN − SEA", text=3 if multi else 2))
    for r in rows:
        table.add(*([_model(r.model)] if multi else []), r.kind,
                  SUBSET_SHORT.get(r.subset, r.subset), Number(r.en), Number(r.sea),
                  Number(r.gap))
    table.caption = PAPER_LANGUAGE_GAP_NOTE
    return table.build()


def language_gap_table(results: SafetyResults) -> DataTable | None:
    """EN minus each local language on paired items (points) with the paired 95% CI."""
    if not results.language_gap:
        return None
    table = TableBuilder(f"Language gap · EN − local, paired items · "
                         f"{auprc_name(results.auprc)} points",
                         columns("task", "subset", "lang", "EN", "local", "EN − local",
                                 "95% CI", "pairs", text=3))
    for r in results.language_gap:
        table.add(r.kind, SUBSET_SHORT.get(r.subset, r.subset), r.lang,
                  Number(r.en, scale=100), Number(r.sea, scale=100), Number(r.gap, scale=100),
                  Interval(r.low, r.high), r.n_pairs)
    return table.build()


def cultural_gap_table(results: SafetyResults) -> DataTable | None:
    """General minus CG per task and side (AUPRC points), read from Table 2."""
    if not results.cultural_gap:
        return None
    table = TableBuilder(f"Cultural gap · General − CG · {auprc_short(results.auprc)} points",
                         columns("model", "task", "side", "General", "CG", "General − CG",
                                 text=3))
    for r in results.cultural_gap:
        table.add(_model(r.model), r.kind, r.side.upper(), Number(r.general), Number(r.cg),
                  Number(r.gap))
    table.caption = PAPER_CULTURAL_GAP_NOTE
    return table.build()


def pair_type_tables(results: SafetyResults,
                     contexts: tuple[str, ...] = tuple(Context)) -> list[DataTable]:
    """Fig. 4: true vs predicted pair type at 0.5, one table per model and response context
    (with / without the prompt); cells are row percentages (counts)."""
    tables = []
    for m in results.pair_type_confusion:
        if m.context not in contexts:
            continue
        where = "with" if Context(m.context).shows_prompt else "without"
        table = TableBuilder(f"Pair types (Fig. 4) · response judged {where} the prompt · "
                             f"{_model(m.model)} · threshold {m.threshold}",
                             columns("true \\ predicted", *m.types),
                             f"prompt/response, S = safe, H = harmful; rows sum to 100%; {m.n} "
                             f"items, {m.n_failed} failed, {m.n_excluded} excluded.")
        for i, name in enumerate(m.types):
            fr = m.fractions[i]
            table.add(name, *(Number(fr[j], 0, 100, unit="%", note=f"({m.counts[i][j]})")
                              if fr else Number(None) for j in range(len(m.types))))
        tables.append(table.build())
    return tables


def score_distribution_table(results: SafetyResults) -> DataTable | None:
    """Fig. 6: P(harmful) on safe, sensitive and harmful items per task: mean, quartiles, the
    share in the middle [0.25, 0.75] and a histogram over [0, 1]."""
    rows = results.score_distribution
    if not rows:
        return None
    table = TableBuilder("Scores by gold label (Fig. 6) · P(harmful)",
                         columns("task", "gold", "n", "mean", "q25", "median", "q75", "middle",
                                 "0 → 1", text=2),
                         "middle = share of scores in [0.25, 0.75]; 0 → 1 = histogram over "
                         "ten equal bins (a calibrated guard puts sensitive items in the middle).")
    table.columns[-1] = columns("0 → 1")[0]  # a sparkline: left-aligned, as text is
    models = {r.model for r in rows}
    for r in rows:
        task = r.kind if len(models) == 1 else f"{_model(r.model)} {r.kind}"
        table.add(task, r.label, r.n, *(Number(v, 2) for v in (r.mean, r.q25, r.median, r.q75)),
                  Number(r.frac_middle, 0, 100, unit="%"), Spark(tuple(r.histogram)))
    return table.build()


def awareness_delta_table(comparison: AwarenessComparison) -> DataTable:
    """Paper Table 3: culture-aware minus plain AUPRC (points) per CG cell of Table 2."""
    multi = len({r.model for r in comparison.rows}) > 1
    table = TableBuilder(f"Cultural awareness (Table 3) · {comparison.task} · CG subset · "
                         "AUPRC points",
                         columns(*(["model"] if multi else []), "task", "side", "plain",
                                 "aware", "delta", text=3 if multi else 2),
                         f"guard {comparison.guard} on {_model(comparison.model or '')}; "
                         "delta = aware − plain; SEA = mean over local languages.")
    for r in comparison.rows:
        table.add(*([_model(r.model)] if multi else []), r.kind.value, r.side.upper(),
                  Number(r.baseline), Number(r.aware), Number(r.delta, sign=True))
    return table.build()


def safety_comparison_table(comparison: SafetyComparison) -> DataTable:
    """B − A PR-AUC per task, context and language on shared samples, paired bootstrap CI."""
    table = TableBuilder(f"B − A {auprc_name(comparison.auprc)} (points) on the samples "
                         "both runs scored; paired bootstrap 95% CI",
                         columns("task", "context", "lang", "n", "A", "B", "B − A", "95% CI",
                                 text=3))
    for r in comparison.rows:
        if r.note is not None:  # one class: no PR-AUC
            table.add(r.kind.value, r.context.value, r.lang, r.n, Number(None), Number(None),
                      Number(None), r.note or "")
            continue
        table.add(r.kind.value, r.context.value, r.lang, r.n, Number(r.auprc_a, scale=100),
                  Number(r.auprc_b, scale=100), Number(r.diff, scale=100, sign=True),
                  Interval(r.low, r.high))
    return table.build()


def safety_tables(results: SafetyResults,
                  contexts: tuple[str, ...] = tuple(Context)) -> list[DataTable]:
    """Every table of a safety run, in report order."""
    transfer, _ = threshold_transfer_table(results)
    tables = (overall_table(results), *table2_tables(results),
              per_language_table(results, contexts), table2_gap_table(results),
              language_gap_table(results), cultural_gap_table(results),
              *pair_type_tables(results, contexts), culture_choice_table(results),
              score_distribution_table(results), threshold_sweep_table(results), transfer)
    return [t for t in tables if t is not None]


def culture_choice_table(results: SafetyResults) -> DataTable | None:
    """An ``agentic-moe`` run's cultural classifier against the data's countries: per model,
    task and country, the items it chose each culture for, and the share it chose the item's
    own country for (a classifier's accuracy, where the data names one)."""
    rows = results.culture_choices
    if not rows:
        return None
    cultures = sorted({c for r in rows for c in r.chosen})
    table = TableBuilder("Cultural classifier's choice against the item's country "
                         "(agentic-moe)",
                         columns("model", "task", "country", "items", *cultures, "unread",
                                 "chose its country", text=3),
                         "Each item counted once, under the culture its classifier chose most "
                         "often; unread: no readable culture in every try.")
    for r in rows:
        table.add(_model(r.model), r.kind, r.country, r.n,
                  *(r.chosen.get(c, 0) for c in cultures), r.n_unread,
                  Number(r.chosen.get(r.country, 0) / r.n if r.n else None, 0, 100,
                         unit="%"))
    return table.build()


def safety_notes(results: SafetyResults) -> list[RichText]:
    """What the console prints after the tables: transfer notes, label policy, counts."""
    lines = [*transfer_notes(results),
             *(f"Label policy: {line}" for line in results.label_policy.values())]
    # --limit counts item ids, each kept in every language (issue 69: 100 gave 696 samples)
    limit = results.limit
    limited = (f" (--limit {limit}: at most {limit} item ids per subset, each in every one of "
               f"its languages: {', '.join(results.langs)})" if limit else "")
    lines.append(f"{results.n_samples} samples{limited}; {results.n_failed} failed "
                 f"({_failed_fate(results)}); {results.n_excluded} excluded by the label "
                 "policy.")
    return [RichText(line) for line in lines]


def _failed_fate(results: SafetyResults) -> str:
    """What became of the failed samples, by the run's --on-failure: under ``iris`` some are
    kept with IRIS's score and the rest left out (issue 63: this line said "--on-failure
    neutral" for them while the run's warning said "left out")."""
    kept, out = results.n_neutral, results.n_failed - results.n_neutral
    if results.on_failure == "iris":
        return (f"{kept} scored as IRIS scores them and kept, --on-failure iris; {out} left "
                "out, never counted as safe")
    if kept:
        return "scored 1/#labels and kept: --on-failure neutral, the authors' rule"
    return "left out, never counted as safe"


RUN_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def per_language_runs_table(runs: list[tuple[str, SafetyResults]]) -> DataTable | None:
    """PR-AUC % per task, subset and language, one column per run (A, B, ...; the caption
    names them): several runs' per-language tables side by side, as each run scored them."""
    keyed: dict[tuple[str, str, str], list[Number]] = {}
    for k, (_, results) in enumerate(runs):
        for r in results.per_language:
            cells = keyed.setdefault((_task_name(r), r.subset, r.lang),
                                     [Number(None)] * len(runs))
            cells[k] = Number(r.auprc, scale=100, note=WARNED if r.warning else "")
    if not keyed:
        return None
    letters = RUN_LETTERS[:len(runs)]
    table = TableBuilder(f"Per subset and language, run by run · "
                         f"{auprc_name(runs[0][1].auprc)} %",
                         columns("task", "subset", "lang", *letters, text=3),
                         "; ".join(f"{letter} = {label}" for letter, (label, _) in
                                   zip(letters, runs)) + f"; {WARNED}: the run's PR-AUC says "
                         "nothing there (one class, or every score equal).")
    for (task, subset, lang), cells in keyed.items():
        table.add(task, SUBSET_SHORT.get(subset, subset), lang, *cells)
    return table.build()
