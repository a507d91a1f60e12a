"""Tables of the threshold analyses of a safety run (Fig. 5's sweep and the transfer of a
calibrated threshold across languages), built from its typed results."""

from __future__ import annotations

from ..records.safety import SafetyResults, Sweep, TransferBlock
from ..render.cells import short_model as _model
from ..render.table import DataTable, Number, TableBuilder, columns


def threshold_sweep_table(results: SafetyResults, step: float = 0.1) -> DataTable | None:
    """Fig. 5, compact: precision, recall, F1, FPR at every ``step`` of the stored sweep."""
    curves = [c for c in results.threshold_sweep if c.sweep]
    if not curves:
        return None
    table = TableBuilder(f"Threshold sweep (Fig. 5) · every {step:g}",
                         columns("task", "threshold", "precision", "recall", "F1", "FPR"))
    models = {c.model for c in curves}
    best = []
    for c in curves:
        task = c.kind if len(models) == 1 else f"{_model(c.model)} {c.kind}"
        points = [p for p in c.sweep if abs(p.threshold / step - round(p.threshold / step))
                  < 1e-6]
        for i, p in enumerate(points):
            table.add(task if i == 0 else "", Number(p.threshold, 2),
                      *(Number(v, 3) for v in p.rates()),
                      end_section=i == len(points) - 1)
        best.append(_best(task, c))
    table.caption = ("Best F1 on these same items (descriptive, not a tuned result): "
                     + ", ".join(best) + ". See the threshold transfer table for a tuned one.")
    return table.build()


def _best(task: str, curve: Sweep) -> str:
    """"prompt: F1 0.462 at threshold 0.31": the best F1 and where it is, each named."""
    t = curve.best_f1_threshold
    point = next((p for p in curve.sweep if t is not None and abs(p.threshold - t) < 1e-9), None)
    if t is None or point is None or point.f1 is None:
        return f"{task}: none"
    return f"{task}: F1 {point.f1:.3f} at threshold {t:.2f}"


def threshold_transfer_table(results: SafetyResults) -> tuple[DataTable | None, list[str]]:
    """A best-F1 threshold chosen on the calibration language, applied to every other
    language: two rows per language (0.5, then the calibrated threshold). Also the notes of
    the tasks that were skipped."""
    notes = transfer_notes(results)
    blocks = [b for b in results.threshold_transfer if b.languages]
    if not blocks:
        return None, notes
    cal = results.calibration or blocks[0].calibrate_on
    table = TableBuilder(f"Threshold transfer · best-F1 threshold chosen on {cal}, applied to "
                         "the other languages",
                         columns("task", "lang", "n", "threshold", "precision", "recall", "F1",
                                 "FPR", text=2))
    multi = len({b.model for b in blocks}) > 1
    for b in blocks:
        _transfer_block(table, b, f"{_model(b.model)} {b.kind}" if multi else b.kind)
    table.caption = ("fixed = the usual 0.5; the calibrated threshold never sees the language "
                     f"it is reported on ({cal} items: " + ", ".join(
                         f"{b.kind} n={b.n_calibration}" for b in blocks) + ").")
    return table.build(), notes


def transfer_notes(results: SafetyResults) -> list[str]:
    """Why a task's threshold transfer was skipped (one class only, no other language); none
    for a run in one language, which has no transfer to speak of (issue 69: a stray line for
    XSTest and JBB through safety-responses). results.json keeps each note."""
    if len({r.lang for r in results.per_language}) == 1:
        return []
    return [f"Threshold transfer, {b.kind}: {b.note}" for b in results.threshold_transfer
            if b.note]


def _transfer_block(table: TableBuilder, block: TransferBlock, task: str) -> None:
    """Each language: its row at the fixed threshold, then at the calibrated one."""
    for i, row in enumerate(block.languages):
        last = i == len(block.languages) - 1
        for j, (point, name) in enumerate(((row.default, "fixed"),
                                           (row.calibrated, block.calibrate_on))):
            table.add(task if i == 0 and j == 0 else "", row.lang if j == 0 else "",
                      row.n if j == 0 else "", Number(point.threshold, 2, note=name),
                      *(Number(v, 3) for v in point.rates()),
                      end_section=last and j == 1)
