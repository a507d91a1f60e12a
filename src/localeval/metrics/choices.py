"""The names of the metrics' choices (``--threshold-grid``, ``--threshold-rule``, ``--auprc``)
and the papers' defaults, without numpy: the command line builds its flags from them, and
``localeval --help`` imports no array library. :mod:`.classification` holds the values behind
the names (a test checks that its tables have exactly these keys)."""

from __future__ import annotations

from typing import get_args

# each declared once, where the records see them too
from ..choices import Auprc as Auprc
from ..choices import FileRounding as FileRounding
from ..choices import OneClass as OneClass
from ..choices import ThresholdGrid as ThresholdGrid
from ..choices import ThresholdRule as ThresholdRule

# The thresholds of the sweep and of best F1 (classification.THRESHOLD_GRIDS): IRIS's float grid
# or 0.01 .. 0.99 exactly.
THRESHOLD_GRID_NAMES: tuple[ThresholdGrid, ...] = get_args(ThresholdGrid)
PAPER_THRESHOLD_GRID: ThresholdGrid = "iris"
# When a score counts as harmful at threshold t. "gt" (score > t) is IRIS's
# (`metrics/safeguard_metrics.py`, the F1/FPR of SEA-SafeguardBench); "ge" (score >= t) is
# Parallax-AI's. They differ only for scores exactly at t: discrete scores (a moderation API's
# 0.33/0.66, a neutral 0.5) sit there often.
THRESHOLD_RULES: tuple[ThresholdRule, ...] = get_args(ThresholdRule)
PAPER_THRESHOLD_RULE: ThresholdRule = "gt"
# The two AUPRC estimators (classification.AUPRC_METRICS): the papers' trapezoid, or average
# precision.
AUPRC_NAMES: tuple[Auprc, ...] = get_args(Auprc)
PAPER_AUPRC: Auprc = "trapezoid"
# A file (a group of one Table 2 cell) whose items are all of one class. "iris": the value
# scikit-learn's curve gives it, as IRIS `metrics/safeguard_metrics.py` `SafeGuardMetric.update`
# takes it (trapezoid: all harmful 1.0, all safe 0.5), and it enters the cell's mean (the
# authors' code); "left-out": no value (NaN), left out of every mean (ours: one class ranks
# nothing).
ONE_CLASS_NAMES: tuple[OneClass, ...] = get_args(OneClass)
PAPER_ONE_CLASS: OneClass = "iris"
# Each file's value before a cell's mean: "none" (ours: as computed) or "iris" (rounded to 0.1
# points, IRIS `get_eval_result.py` `get_eval_results`' round(pr_auc * 100, 1)).
FILE_ROUNDING_NAMES: tuple[FileRounding, ...] = get_args(FileRounding)
DEFAULT_FILE_ROUNDING: FileRounding = "none"
