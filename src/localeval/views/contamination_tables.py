"""Tables of a contamination run, built from its typed results: per k, each dataset's median
(and mean) Min-K% Prob and Min-K%++, the median gap, and ROC-AUC when membership labels were
given."""

from __future__ import annotations

from rich.text import Text as RichText

from ..records.contamination import ContaminationResults, Summary
from ..records.samples import SCORES, Score
from ..render.table import DataTable, Number, TableBuilder, Text, columns

TITLES: dict[Score, str] = {"min_k": "Min-K% Prob", "min_k_pp": "Min-K%++"}
NEGATED = "Min-K% Prob negated"  # how results' sign starts with --min-k-sign negated


def _score_table(results: ContaminationResults, score: Score) -> DataTable | None:
    sources = results.sources
    of = {n: sources[n].summaries(score) or {} for n in (results.source_order or sources)}
    names = [n for n, summaries in of.items() if summaries]
    if not names:
        return None
    ks = results.k
    gaps = {g: v[score] for g, v in results.median_gaps.items() if score in v}
    negated = score == "min_k" and (results.sign or "").startswith(NEGATED)
    table = TableBuilder(f"{TITLES[score]}: median (mean) per dataset; "
                         f"{'lower' if negated else 'higher'} = more likely seen in training",
                         columns("k %", *(f"{n} (n={_scored(of[n], ks)})"
                                          for n in names), *(f"median {g}" for g in gaps),
                                 text=0))
    for k in results.k:
        cells = [of[n].get(k) for n in names]
        # a cell is None where --k-tokens floor left every text without a value at k
        table.add(k, *(Number(c.median, 3, note=f"({c.mean:.3f})")
                       if c is not None and c.median is not None and c.mean is not None
                       else Text("—") for c in cells),
                  *(Number(gaps[g][k], 3, sign=True) if gaps[g].get(k) is not None
                    else Text("—") for g in gaps))
    return table.build()


def _scored(per_k: dict[str, Summary | None], ks: list[str]) -> str:
    """How many texts the dataset's column scored: at the first k with a score (with
    --k-tokens floor a small k may have none: every text shorter than 100/k tokens), "—"
    where no k has one."""
    return next((str(c.n) for k in ks if (c := per_k.get(k)) is not None), "—")


def _auc_table(results: ContaminationResults) -> DataTable | None:
    auc = results.roc_auc
    if not auc or "min_k" not in auc:
        return None
    table = TableBuilder(f"ROC-AUC, members vs non-members (n={auc['n']}, "
                         f"{auc['n_members']} members)",
                         columns("k %", *(TITLES[s] for s in SCORES), text=0))
    for k in results.k:
        table.add(k, *(Number(auc[s][k], 3) if auc.get(s) and auc[s][k] is not None
                       else Text("unavailable") for s in SCORES))
    return table.build()


def contamination_tables(results: ContaminationResults) -> list[DataTable]:
    tables = (*(_score_table(results, score) for score in SCORES), _auc_table(results))
    return [t for t in tables if t is not None]


def contamination_notes(results: ContaminationResults) -> list[RichText]:
    lines = []
    if not any(s.min_k_pp for s in results.sources.values()):
        lines.append("Min-K%++ unavailable: the backend gives no next-token distribution "
                     "(an HTTP server); Min-K% is exact.")
    sign = results.sign or "mean log-probs (<= 0); the TMLU paper reports their negation"
    lines.append(f"Scores: {sign}. {results.n_samples} texts, {results.n_failed} failed.")
    roc_auc = results.roc_auc or {}
    if roc_auc.get("note"):
        lines.append(f"ROC-AUC: {roc_auc['note']}")
    return [RichText(line) for line in lines]
