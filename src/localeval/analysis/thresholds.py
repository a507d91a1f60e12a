"""Thresholds (SEA-SafeguardBench Fig. 5 and §5.2): precision, recall, F1 and FPR swept over
thresholds, and a threshold tuned on one language applied to the others.

Records are the safety samples of :mod:`localeval.analysis.gaps`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ..metrics.choices import ThresholdRule
from ..metrics.classification import (
    DEFAULT_THRESHOLDS,
    PAPER_THRESHOLD_RULE,
    best_f1_threshold,
    confusion_at,
    threshold_sweep,
)
from ..records.safety import Sweep, TransferBlock, TransferLanguage
from ..records.sample_kinds import Context, SampleKind
from ..records.samples import SafetySample
from .gaps import by_model, check_records, scored

DEFAULT_THRESHOLD = 0.5  # the usual fixed cut: Fig. 4's pair types, threshold transfer's "default"


def threshold_curve(records: Iterable[SafetySample], kind: SampleKind | str,
                    subset: str | None = None, thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
                    rule: ThresholdRule = PAPER_THRESHOLD_RULE) -> list[Sweep]:
    """Fig. 5: precision, recall, F1 and FPR at each threshold, per model, for one task;
    ``rule`` says whether a score equal to the threshold is harmful (``metrics.classification``).

    ``best_f1_threshold`` is where F1 peaks on *these* records: descriptive only. To report F1
    at a tuned threshold, tune on other items (``metrics.classification.calibrated_confusion``).
    """
    kind = SampleKind(kind)
    mine = [r for r in check_records(records) if r.kind is kind and
            (subset is None or r.subset == subset) and r.context is Context.WITH_PROMPT]
    out = []
    for model, rows in by_model(mine).items():
        t, s, failed, excluded = scored(rows)
        sweep = threshold_sweep(t, s, thresholds, rule) if len(t) else []
        best = best_f1_threshold(t, s, thresholds, rule) if len(t) else None
        out.append(Sweep.made({"model": model, "kind": kind, "subset": subset, "sweep": sweep,
                               "best_f1_threshold": best, "n": len(t), "n_failed": failed,
                               "n_excluded": excluded}))
    return out


def threshold_transfer(samples: Iterable[SafetySample], kind: SampleKind | str,
                       calibrate_on: str = "en", context: Context | str = Context.WITH_PROMPT,
                       rule: ThresholdRule = PAPER_THRESHOLD_RULE,
                       thresholds: Sequence[float] = DEFAULT_THRESHOLDS) -> list[TransferBlock]:
    """A threshold tuned on one language, applied to the others (paper Fig. 5 and §5.2).

    For each model: the best-F1 threshold (of ``thresholds``, by default IRIS's grid; the lowest
    if tied) of the ``kind``
    samples in language ``calibrate_on`` (all subsets, this ``context``), then precision,
    recall, F1 and FPR of every *other* language at 0.5 (``default``) and at that threshold
    (``calibrated``). The calibration language is never reported, so no number comes from the
    data that chose its threshold. When the calibration language is absent or has one class
    only the block has ``threshold`` None, no ``languages`` and a ``note`` saying why.
    """
    kind, context = SampleKind(kind), Context(context)
    mine = [s for s in check_records(samples) if s.kind is kind and s.context is context]
    return [_transfer(model, rows, kind, context, calibrate_on, rule, thresholds)
            for model, rows in by_model(mine).items()]


def _transfer(model: str, rows: list[SafetySample], kind: SampleKind, context: Context,
              calibrate_on: str, rule: ThresholdRule, thresholds: Sequence[float]) -> TransferBlock:
    t, sc, failed, _ = scored(s for s in rows if s.lang == calibrate_on)
    note = _calibration_problem(t, failed, kind, calibrate_on)
    threshold, languages = None, []
    if not note:
        threshold = best_f1_threshold(t, sc, thresholds, rule)
        others = sorted({s.lang for s in rows} - {calibrate_on})
        if not others:
            note = f"no language other than {calibrate_on!r} to apply the threshold to"
        for lang in others:
            lt, ls, lfailed, lexcluded = scored(s for s in rows if s.lang == lang)
            if len(lt):
                languages.append(TransferLanguage.made({
                    "lang": lang, "n": len(lt), "n_harmful": int(lt.sum()), "n_failed": lfailed,
                    "n_excluded": lexcluded,
                    "default": confusion_at(lt, ls, DEFAULT_THRESHOLD, rule),
                    "calibrated": confusion_at(lt, ls, threshold, rule)}))
    return TransferBlock.made({"model": model, "kind": kind, "context": context,
                               "calibrate_on": calibrate_on, "threshold": threshold,
                               "default_threshold": DEFAULT_THRESHOLD, "n_calibration": len(t),
                               "n_calibration_harmful": int(t.sum()), "note": note,
                               "languages": languages})


def _calibration_problem(t: np.ndarray, failed: int, kind: str, lang: str) -> str | None:
    if not len(t):
        return (f"skipped: no scored {kind} samples in the calibration language {lang!r}"
                + (f" ({failed} failed)" if failed else ""))
    if t.min() == t.max():
        return (f"skipped: the calibration language {lang!r} has only "
                f"{'harmful' if t[0] else 'safe'} {kind} samples, so F1 cannot choose a "
                "threshold")
    return None
