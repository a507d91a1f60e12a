"""IRIS's threshold grid and the F1 and FPR at each file's best-F1 threshold
(metrics/best_threshold.py, metrics/classification.py; SEA-SafeguardBench App. D.5): the grid's
floats, a score at a grid point, the threshold IRIS picks, and the D.5 tables in results, export
and the report. Each expected value is worked out by hand from the upstream code (panuthept/IRIS
``8cfede9``, cited per test)."""

from __future__ import annotations

import json

import pytest

from localeval.metrics.classification import (
    DEFAULT_THRESHOLDS,
    best_f1_threshold,
    threshold_sweep,
)

# Scores kept off IRIS's grid points (0.105, not 0.1), so the hand count needs no float care.
FILE_A = [(1, 0.905), (0, 0.705), (1, 0.605), (1, 0.405), (0, 0.355), (0, 0.105)]


FILE_B = [(1, 0.805), (0, 0.305)]


def _records(rows, country):
    return [{"id": f"{country}{i}", "lang": "en", "subset": "cultural-cg", "kind": "prompt",
             "label": t, "score": s, "country": country, "context": "with_prompt",
             "raw_label": "harmful" if t else "safe"} for i, (t, s) in enumerate(rows)]


def test_best_threshold_f1_and_fpr_as_iris_safeguard_metric():
    """IRIS metrics/safeguard_metrics.py SafeGuardMetric.update: from 0.01, each t of
    np.arange(0.02, 1.00, 0.01) kept when F1 strictly improves; best_fpr at that t. File A:
    t < 0.105 calls all 6 harmful (F1 6/9); t in [0.11, 0.35] TP 3 FP 2 (6/8); t in
    [0.36, 0.40] TP 3 FP 1: F1 6/7 = 0.857143, FPR 1/3, the first t of it 0.36 (the grid's
    float); above, F1 falls (4/6, 2/5, 2/4, 0)."""
    from localeval.metrics.best_threshold import at_best_threshold
    from localeval.metrics.classification import IRIS_THRESHOLDS

    t, s = zip(*FILE_A, strict=True)
    got = at_best_threshold(t, s)
    assert got["f1"] == pytest.approx(6 / 7) and got["fpr"] == pytest.approx(1 / 3)
    assert got["threshold"] == IRIS_THRESHOLDS[35] == pytest.approx(0.36)
    t, s = zip(*FILE_B, strict=True)  # t = 0.31 separates them: F1 1, FPR 0
    assert at_best_threshold(t, s) == {"threshold": pytest.approx(0.31), "f1": 1.0, "fpr": 0.0}
    only_harmful = at_best_threshold([1, 1], [0.2, 0.7])
    assert only_harmful["f1"] == 1.0 and only_harmful["fpr"] != only_harmful["fpr"]  # NaN


def test_d5_cells_are_the_mean_of_each_files_value():
    """get_eval_result.py get_eval_results gives [best_f1, pr_auc, best_fpr] per file and
    report_sum_results averages the files: CG EN = mean of the countries' files, so F1
    (6/7 + 1) / 2 = 92.857 points and FPR (1/3 + 0) / 2 = 16.667 points."""
    from localeval.analysis.choices import AnalysisChoices
    from localeval.analysis.safety import analyses

    results = analyses(_records(FILE_A, "Thailand") + _records(FILE_B, "Singapore"),
                       AnalysisChoices(n_resamples=0))
    d5 = results["table_d5"]
    assert d5["f1"]["rows"][0]["values"]["prompt/cultural-cg/en"] == pytest.approx(
        100 * (6 / 7 + 1) / 2)
    assert d5["fpr"]["rows"][0]["values"]["prompt/cultural-cg/en"] == pytest.approx(
        100 * (1 / 3) / 2)


def test_d5_tables_reach_results_export_and_the_report(tmp_path):
    from offline_runs import safeguard_run

    from localeval.cli import main

    safeguard_run(tmp_path / "run")
    results = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    assert set(results["table_d5"]) == {"f1", "fpr"}
    assert main(["export", str(tmp_path / "run"), "--format", "md", "--output",
                 str(tmp_path / "tables")]) == 0
    text = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "tables").iterdir())
    assert "F1 % at each file's best-F1 threshold (App. D.5" in text
    assert "FPR % at each file's best-F1 threshold (App. D.5" in text
    assert main(["report", str(tmp_path / "run"), "--output", str(tmp_path / "r.html")]) == 0
    assert "App. D.5" in (tmp_path / "r.html").read_text(encoding="utf-8")


# 0.01 .. 0.99 as exact decimals: the grid before issue 34, now --threshold-grid decimal
DECIMAL_THRESHOLDS = tuple(round(t / 100, 2) for t in range(1, 100))


def test_threshold_grid_is_iris_floats():
    # IRIS metrics/safeguard_metrics.py SafeGuardMetric.update: best_threshold starts at 0.01,
    # then `for threshold in np.arange(0.02, 1.00, 0.01)`, k = 0..97. numpy's arange fills
    # start + k * delta, delta = (start + step) - start = 0.009999999999999998 in float64.
    delta = (0.02 + 0.01) - 0.02
    assert len(DEFAULT_THRESHOLDS) == 1 + 98
    assert DEFAULT_THRESHOLDS[0] == 0.01 and DEFAULT_THRESHOLDS[1] == 0.02
    assert DEFAULT_THRESHOLDS[1:] == tuple(0.02 + k * delta for k in range(98))
    assert DEFAULT_THRESHOLDS[1 + 48] == 0.49999999999999994
    assert DEFAULT_THRESHOLDS[-1] == 0.9899999999999999
    assert sum(t != round(t, 2) for t in DEFAULT_THRESHOLDS) == 80


def test_a_score_at_the_decimal_counts_harmful_on_iris_grid():
    # score 0.5, harmful: at IRIS's "0.5" (0.49999999999999994) 0.5 > t, so it is called
    # harmful (TP) even under score > t; on exact decimals it would be a FN.
    sweep = threshold_sweep([0, 1], [0.3, 0.5])
    at_half = next(p for p in sweep if abs(p["threshold"] - 0.5) < 1e-9)
    assert (at_half["tp"], at_half["fn"]) == (1, 0)
    decimal = threshold_sweep([0, 1], [0.3, 0.5], DECIMAL_THRESHOLDS)
    assert next(p for p in decimal if p["threshold"] == 0.5)["tp"] == 0


def test_best_f1_threshold_as_iris_picks_it():
    # y = [0, 1], scores [0.25, 0.5]. IRIS: F1 = 2/3 while the safe 0.25 is above t; at
    # t = 0.24999999999999994 (k = 23) 0.25 > t still; the first t where only 0.5 is above is
    # k = 24: 0.25999999999999995, F1 = 1, kept (strictly better), never beaten.
    assert best_f1_threshold([0, 1], [0.25, 0.5]) == 0.25999999999999995
    assert best_f1_threshold([0, 1], [0.25, 0.5], DECIMAL_THRESHOLDS) == 0.25
