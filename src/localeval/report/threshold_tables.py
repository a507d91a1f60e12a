"""Console tables of the threshold analyses of a safety run (Fig. 5's sweep and the transfer
of a calibrated threshold across languages). They only read results.json."""

from __future__ import annotations

from rich.table import Table

from .cells import num as _num
from .cells import short_model as _model


def threshold_sweep_table(results: dict, step: float = 0.1) -> Table | None:
    """Fig. 5, compact: precision, recall, F1, FPR at every ``step`` of the stored sweep."""
    curves = [c for c in results.get("threshold_sweep") or [] if c["sweep"]]
    if not curves:
        return None
    table = Table(title=f"Threshold sweep (Fig. 5) · every {step:g}")
    for col in ("task", "threshold", "precision", "recall", "F1", "FPR"):
        table.add_column(col, justify="left" if col == "task" else "right")
    models = {c["model"] for c in curves}
    best = []
    for c in curves:
        task = c["kind"] if len(models) == 1 else f"{_model(c['model'])} {c['kind']}"
        points = [p for p in c["sweep"] if abs(p["threshold"] / step
                                               - round(p["threshold"] / step)) < 1e-6]
        for i, p in enumerate(points):
            table.add_row(task if i == 0 else "", f"{p['threshold']:.2f}",
                          *[_num(p[k], 1, 3) for k in ("precision", "recall", "f1", "fpr")],
                          end_section=i == len(points) - 1)
        best.append(f"{task} {c['best_f1_threshold']}")
    table.caption = ("Best F1 on these same items (descriptive, not a tuned result): "
                     + ", ".join(best) + ". See the threshold transfer table for a tuned one.")
    return table


def threshold_transfer_table(results: dict) -> tuple[Table | None, list[str]]:
    """A best-F1 threshold chosen on the calibration language, applied to every other
    language: two rows per language (0.5, then the calibrated threshold). Also the notes of
    the tasks that were skipped."""
    blocks = results.get("threshold_transfer") or []
    notes = [f"Threshold transfer, {b['kind']}: {b['note']}" for b in blocks if b.get("note")]
    blocks = [b for b in blocks if b["languages"]]
    if not blocks:
        return None, notes
    cal = results.get("calibration") or blocks[0]["calibrate_on"]
    table = Table(title=f"Threshold transfer · best-F1 threshold chosen on {cal}, applied to "
                        "the other languages")
    for col in ("task", "lang", "n", "threshold", "precision", "recall", "F1", "FPR"):
        table.add_column(col, justify="left" if col in ("task", "lang") else "right")
    multi = len({b["model"] for b in blocks}) > 1
    for b in blocks:
        _transfer_block(table, b, f"{_model(b['model'])} {b['kind']}" if multi else b["kind"])
    table.caption = ("fixed = the usual 0.5; the calibrated threshold never sees the language "
                     f"it is reported on ({cal} items: " + ", ".join(
                         f"{b['kind']} n={b['n_calibration']}" for b in blocks) + ").")
    return table, notes


def _transfer_block(table: Table, block: dict, task: str) -> None:
    for i, row in enumerate(block["languages"]):
        _transfer_rows(table, task if i == 0 else "", row, block["calibrate_on"],
                       last=i == len(block["languages"]) - 1)


def _transfer_rows(table: Table, task: str, row: dict, calibrate_on: str, last: bool) -> None:
    """One language: its row at the fixed threshold, then at the calibrated one."""
    for j, (key, name) in enumerate((("default", "fixed"), ("calibrated", calibrate_on))):
        m = row[key]
        table.add_row(task if j == 0 else "", row["lang"] if j == 0 else "",
                      str(row["n"]) if j == 0 else "", f"{m['threshold']:.2f} {name}",
                      *[_num(m[k], 1, 3) for k in ("precision", "recall", "f1", "fpr")],
                      end_section=last and j == 1)
