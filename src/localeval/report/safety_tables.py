"""Console tables of a safety run. They only read results.json; they never recompute a number."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from .cells import SPARK_BARS
from .cells import num as _num
from .cells import short_model as _model
from .threshold_tables import threshold_sweep_table, threshold_transfer_table

SUBSET_SHORT = {"general": "General", "cultural-itw": "ITW", "cultural-cg": "CG"}


# How each PR-AUC estimator is named in titles (results["auprc"]; runs without it used AP).
AUPRC_NAMES = {"trapezoid": "PR-AUC (trapezoid, the paper's)", "ap": "AUPRC (average precision)"}


def _auprc(results: dict) -> str:
    return AUPRC_NAMES.get(results.get("auprc", "ap"), "AUPRC")


def table2_tables(results: dict) -> list[Table]:
    """The paper's Table 2 layout (AUPRC points), one table per task (prompt, response) so it
    fits a terminal; empty when no cell has a value."""
    t2 = results.get("table2") or {}
    if not any(v is not None for row in t2.get("rows", []) for v in row["values"].values()):
        return []
    return [_table2_task(results, kind, [c for c in t2["columns"] if c.startswith(kind + "/")])
            for kind in dict.fromkeys(c.split("/")[0] for c in t2["columns"])]


def _table2_column(col: str) -> str:
    _, *rest = col.split("/")
    return "Avg" if rest == ["avg"] else f"{SUBSET_SHORT.get(rest[0], rest[0])}\n{rest[1].upper()}"


def table2_column_name(col: str) -> str:
    """A Table 2 column (``prompt/cultural-cg/en``) as the paper heads it, with its task:
    "Prompt CG EN", "Response Avg"."""
    kind = col.split("/")[0]
    return f"{kind.capitalize()} {_table2_column(col).replace(chr(10), ' ')}"


TABLE2_ORDER = ("general", "cultural-itw", "cultural-cg")  # the paper's column order


def table2_column_order(col: str) -> tuple:
    """Sort key of Table 2 columns in the paper's order: prompt before response; General,
    ITW, CG (then any other subset); EN before SEA; each task's Avg last."""
    kind, *rest = col.split("/")
    if rest == ["avg"]:
        return (kind != "prompt", kind, len(TABLE2_ORDER) + 1, "", False)
    subset = TABLE2_ORDER.index(rest[0]) if rest[0] in TABLE2_ORDER else len(TABLE2_ORDER)
    return (kind != "prompt", kind, subset, rest[0], rest[-1] != "en")


def _table2_task(results: dict, kind: str, cols: list[str]) -> Table:
    t2 = results["table2"]
    table = Table(title=f"{results['task']} · guard {results['guard']} · {kind} "
                        f"classification · {_auprc(results)} (Table 2 layout)")
    table.add_column("Model")
    for col in cols:
        table.add_column(_table2_column(col), justify="right")
    cis = results.get("table2_ci") or {}
    for row in t2["rows"]:
        table.add_row(_model(row["model"]), *[_num(row["values"][c]) for c in cols])
        ci = cis.get(row["model"])
        if ci:  # half-width of the 95% bootstrap interval, under each number
            table.add_row("  95% CI ±", *[_num((ci[c]["high"] - ci[c]["low"]) / 2)
                                           if c in ci else "-" for c in cols])
    failed = [f"{_model(r['model'])}: {n} failed samples left out" for r in t2["rows"]
              if (n := sum(v for c, v in r.get("n_failed", {}).items() if c in cols))]
    # runs from before --en-cell pooled their English items
    en = ("mean over countries" if t2.get("en", "pooled") == "per-country"
          else "pooled over countries")
    table.caption = (f"SEA = {t2.get('sea', 'macro')} mean over local languages; cultural EN "
                     f"= {en}; Avg = mean of the row's cells" + ("; the response is judged with its prompt."
                                             if kind == "response" else ".")
                     + "".join(f" {line}." for line in failed))
    return table


def overall_table(results: dict) -> Table | None:
    """The headline: PR-AUC per task over everything, then per subset (file, source model)."""
    rows = results.get("overall") or []
    if not rows:
        return None
    table = Table(title=f"Overall · {_auprc(results)} % [95% CI] · ROC AUC %")
    for col in ("task", "subset", "n", "harmful", "AUPRC", "95% CI", "ROC AUC", "failed"):
        table.add_column(col, justify="left" if col in ("task", "subset") else "right")
    for r in rows:
        cells = _row_cells(r)
        table.add_row(*cells[:2], *cells[3:-1])
    return table


def _row_cells(r: dict) -> list[str]:
    """task, subset, lang, n, harmful, AUPRC, CI, ROC AUC, failed, excluded of an AUPRC row."""
    task = r["kind"] + (" (no prompt)" if r["context"] == "without_prompt" else "")
    ci = "-" if r["low"] is None else f"[{_num(r['low'], 100)}, {_num(r['high'], 100)}]"
    return [task, SUBSET_SHORT.get(r["subset"], r["subset"]), r.get("lang", ""), str(r["n"]),
            str(r["n_harmful"]), _num(r["auprc"], 100), ci, _num(r["roc_auc"], 100),
            str(r["n_failed"]), str(r["n_excluded"])]


def per_language_table(results: dict, contexts: tuple[str, ...] = ("with_prompt",
                                                                    "without_prompt")) -> Table:
    """AUPRC with its 95% bootstrap CI, ROC AUC and counts per kind, context, subset, language
    (rows of the given response ``contexts``)."""
    table = Table(title=f"Per language · {_auprc(results)} % [95% CI] · ROC AUC %")
    for col in ("task", "subset", "lang", "n", "harmful", "AUPRC", "95% CI", "ROC AUC",
                "failed", "excluded"):
        table.add_column(col, justify="left" if col in ("task", "subset", "lang") else "right")
    for r in results.get("per_language", []):
        if r["context"] in contexts:
            table.add_row(*_row_cells(r))
    return table


def table2_gap_table(results: dict) -> Table | None:
    """The paper's language gap: EN cell minus SEA cell of Table 2, per task and subset."""
    rows = results.get("table2_language_gap") or []
    if not rows:
        return None
    table = Table(title="Language gap (the paper's) · Table 2 EN − SEA cells · points")
    multi = len({r["model"] for r in rows}) > 1
    for col in (["model"] if multi else []) + ["task", "subset", "EN", "SEA", "EN − SEA"]:
        table.add_column(col, justify="left" if col in ("model", "task", "subset") else "right")
    for r in rows:
        table.add_row(*([_model(r["model"])] if multi else []), r["kind"],
                      SUBSET_SHORT.get(r["subset"], r["subset"]), _num(r["en"]), _num(r["sea"]),
                      _num(r["gap"]))
    return table


def language_gap_table(results: dict) -> Table | None:
    """EN minus each local language on paired items (points) with the paired 95% CI."""
    rows = results.get("language_gap") or []
    if not rows:
        return None
    table = Table(title=f"Language gap · EN − local, paired items · {_auprc(results)} points")
    for col in ("task", "subset", "lang", "EN", "local", "EN − local", "95% CI", "pairs"):
        table.add_column(col, justify="left" if col in ("task", "subset", "lang") else "right")
    for r in rows:
        ci = "-" if r.get("low") is None else f"[{_num(r['low'], 100)}, {_num(r['high'], 100)}]"
        table.add_row(r["kind"], SUBSET_SHORT.get(r["subset"], r["subset"]), r["lang"],
                      _num(r.get("en"), 100), _num(r.get("sea"), 100), _num(r["gap"], 100), ci,
                      str(r["n_pairs"]))
    return table


def cultural_gap_table(results: dict) -> Table | None:
    """General minus CG per task and side (AUPRC points), read from Table 2."""
    rows = results.get("cultural_gap") or []
    if not rows:
        return None
    table = Table(title="Cultural gap · General − CG · AUPRC points")
    for col in ("model", "task", "side", "General", "CG", "General − CG"):
        table.add_column(col, justify="left" if col in ("model", "task", "side") else "right")
    for r in rows:
        table.add_row(_model(r["model"]), r["kind"], r["side"].upper(), _num(r["general"]),
                      _num(r["cg"]), _num(r["gap"]))
    return table


def pair_type_tables(results: dict, contexts: tuple[str, ...] = ("with_prompt",
                                                                  "without_prompt")) -> list[Table]:
    """Fig. 4: true vs predicted prompt/response pair type at 0.5, one table per model and
    response context (with / without the prompt); cells are row percentages (counts)."""
    tables = []
    for m in results.get("pair_type_confusion") or []:
        if m["context"] not in contexts:
            continue
        where = "with" if m["context"] == "with_prompt" else "without"
        table = Table(title=f"Pair types (Fig. 4) · response judged {where} the prompt · "
                            f"{_model(m['model'])} · threshold {m['threshold']}")
        table.add_column("true \\ predicted")
        for name in m["types"]:
            table.add_column(name, justify="right")
        for i, name in enumerate(m["types"]):
            fr = m["fractions"][i]
            table.add_row(name, *[f"{100 * fr[j]:.0f}% ({m['counts'][i][j]})" if fr else "-"
                                  for j in range(len(m["types"]))])
        table.caption = (f"prompt/response, S = safe, H = harmful; rows sum to 100%; "
                         f"{m['n']} items, {m['n_failed']} failed, {m['n_excluded']} excluded.")
        tables.append(table)
    return tables


def _spark(histogram: list[int]) -> str:
    top = max(histogram, default=0)
    return "".join(SPARK_BARS[max(1, round(8 * h / top))] if h else " " for h in histogram)


def score_distribution_table(results: dict) -> Table | None:
    """Fig. 6: P(harmful) on safe, sensitive and harmful items per task: mean, quartiles, the
    share in the middle [0.25, 0.75] and a histogram over [0, 1]."""
    rows = results.get("score_distribution") or []
    if not rows:
        return None
    table = Table(title="Scores by gold label (Fig. 6) · P(harmful)")
    for col in ("task", "gold", "n", "mean", "q25", "median", "q75", "middle", "0 → 1"):
        table.add_column(col, justify="left" if col in ("task", "gold", "0 → 1") else "right")
    models = {r["model"] for r in rows}
    for r in rows:
        task = r["kind"] if len(models) == 1 else f"{_model(r['model'])} {r['kind']}"
        table.add_row(task, r["label"], str(r["n"]), *[_num(r[k], 1, 2) for k in
                                                       ("mean", "q25", "median", "q75")],
                      _num(r["frac_middle"], 100, 0) + ("%" if r["frac_middle"] is not None
                                                        else ""), _spark(r["histogram"]))
    table.caption = ("middle = share of scores in [0.25, 0.75]; 0 → 1 = histogram over "
                     "ten equal bins (a calibrated guard puts sensitive items in the middle).")
    return table


def awareness_delta_table(comparison: dict) -> Table:
    """Paper Table 3: culture-aware minus plain AUPRC (points) per CG cell of Table 2, from
    :func:`localeval.compare.compare_runs`."""
    table = Table(title=f"Cultural awareness (Table 3) · {comparison['task']} · CG subset · "
                        "AUPRC points")
    multi = len({r["model"] for r in comparison["rows"]}) > 1
    for col in (["model"] if multi else []) + ["task", "side", "plain", "aware", "delta"]:
        table.add_column(col, justify="left" if col in ("model", "task", "side") else "right")
    for r in comparison["rows"]:
        delta = "-" if r["delta"] is None else f"{r['delta']:+.1f}"
        table.add_row(*([_model(r["model"])] if multi else []), r["kind"], r["side"].upper(),
                      _num(r["baseline"]), _num(r["aware"]), delta)
    table.caption = (f"guard {comparison['guard']} on {_model(comparison['model'] or '')}; "
                     "delta = aware − plain; SEA = mean over local languages.")
    return table


def print_safety_comparison(comparison: dict, console: Console | None = None) -> None:
    """B − A PR-AUC per task, context and language on shared samples, paired bootstrap CI."""
    console = console or Console()
    table = Table(title=f"B − A {AUPRC_NAMES.get(comparison['auprc'], 'AUPRC')} (points) on "
                        "the samples both runs scored; paired bootstrap 95% CI")
    for col in ("task", "context", "lang", "n", "A", "B", "B − A", "95% CI"):
        table.add_column(col, justify="right" if col in ("n", "A", "B", "B − A", "95% CI")
                         else "left")
    for r in comparison["rows"]:
        if "diff" not in r:
            table.add_row(r["kind"], r["context"], r["lang"], str(r["n"]), "-", "-", "-",
                          r.get("note", ""))
            continue
        table.add_row(r["kind"], r["context"], r["lang"], str(r["n"]),
                      _num(r["auprc_a"], 100), _num(r["auprc_b"], 100),
                      f"{100 * r['diff']:+.1f}",
                      f"[{_num(r['low'], 100)}, {_num(r['high'], 100)}]")
    console.print(table)
    console.print(f"A: {comparison['a']} ({comparison['guard_a']})\nB: {comparison['b']} "
                  f"({comparison['guard_b']}); {comparison['n_shared']} shared samples")


def print_awareness_delta(comparison: dict, console: Console | None = None) -> None:
    console = console or Console()
    console.print(awareness_delta_table(comparison))
    console.print(f"plain: {comparison['baseline']}\naware: {comparison['aware']}")


def safety_tables(results: dict, contexts: tuple[str, ...] = ("with_prompt", "without_prompt")
                  ) -> tuple[list[Table], list[str]]:
    """Every table of a safety run, in report order, and the notes that go with them."""
    transfer, notes = threshold_transfer_table(results)
    tables = (overall_table(results), *table2_tables(results),
              per_language_table(results, contexts), table2_gap_table(results),
              language_gap_table(results), cultural_gap_table(results),
              *pair_type_tables(results, contexts), score_distribution_table(results),
              threshold_sweep_table(results), transfer)
    return [t for t in tables if t is not None], notes


def print_safety_report(results: dict, console: Console | None = None,
                        contexts: tuple[str, ...] = ("with_prompt", "without_prompt")) -> None:
    """Table 2 (when the run has its subsets), the per-language table, gaps, pair types
    (Fig. 4), scores by gold label (Fig. 6), the threshold sweep (Fig. 5), threshold transfer
    and counts."""
    console = console or Console()
    tables, notes = safety_tables(results, contexts)
    for table in tables:
        console.print(table)
    for line in notes:
        console.print(line)
    for line in results.get("label_policy", {}).values():
        console.print(f"Label policy: {line}")
    neutral = results.get("n_neutral") or 0
    fate = ("scored 1/#labels and kept: --on-failure neutral, the authors' rule" if neutral
            else "left out, never counted as safe")
    console.print(f"{results['n_samples']} samples; {results['n_failed']} failed ({fate}); "
                  f"{results['n_excluded']} excluded by the label policy.")
