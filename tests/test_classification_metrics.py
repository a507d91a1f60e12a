"""Classification metrics and bootstrap CIs: against scikit-learn and hand-computed cases."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from sklearn import metrics as skm

from localeval.metrics.bootstrap import bootstrap_ci, paired_bootstrap_ci
from localeval.metrics.classification import (
    DEFAULT_THRESHOLDS,
    THRESHOLD_RULES,
    average_precision,
    best_f1_threshold,
    calibrated_confusion,
    confusion_at,
    pr_auc_trapezoid,
    pr_curve,
    roc_auc,
    threshold_sweep,
)


def _cases(n_cases=300, seed=0):
    rng = np.random.default_rng(seed)
    for k in range(n_cases):
        n = int(rng.integers(2, 80))
        t = rng.integers(0, 2, n)
        if t.min() == t.max():
            t[0] = 1 - t[0]
        # every third case rounds scores to force many ties
        s = rng.random(n) if k % 3 else np.round(rng.random(n), 1)
        yield t, s


def test_against_sklearn_random():
    for t, s in _cases():
        assert average_precision(t, s) == pytest.approx(skm.average_precision_score(t, s),
                                                        rel=1e-12, abs=1e-12)
        p, r, _ = skm.precision_recall_curve(t, s)
        assert pr_auc_trapezoid(t, s) == pytest.approx(skm.auc(r, p), rel=1e-12, abs=1e-12)
        assert roc_auc(t, s) == pytest.approx(skm.roc_auc_score(t, s), rel=1e-12, abs=1e-12)


def test_pr_curve_against_sklearn():
    for t, s in _cases():
        if t.min() == t.max():
            continue
        p, r, th = skm.precision_recall_curve(t, s)
        curve = pr_curve(t, s)
        assert np.allclose(curve["precision"], p[::-1], rtol=0, atol=1e-12)
        assert np.allclose(curve["recall"], r[::-1], rtol=0, atol=1e-12)
        assert curve["threshold"][0] is None
        assert np.array_equal(curve["threshold"][1:], th[::-1])


def test_confusion_against_sklearn():
    for t, s in _cases(100, seed=1):
        for th, rule in itertools.product((0.1, 0.5, 0.9), THRESHOLD_RULES):
            c = confusion_at(t, s, th, rule)
            pred = (s > th if rule == "gt" else s >= th).astype(int)
            p, r, f, _ = skm.precision_recall_fscore_support(t, pred, average="binary",
                                                             zero_division=0)
            tn, fp, fn, tp = skm.confusion_matrix(t, pred, labels=[0, 1]).ravel()
            assert (c["tp"], c["fp"], c["fn"], c["tn"]) == (tp, fp, fn, tn)
            assert c["precision"] == pytest.approx(p) and c["recall"] == pytest.approx(r)
            assert c["f1"] == pytest.approx(f)
            assert c["fpr"] == pytest.approx(fp / (fp + tn) if fp + tn else 0.0)


def test_hand_computed():
    t = [1, 0, 1, 0]
    s = [0.9, 0.8, 0.7, 0.1]
    # ranked: 1 (P=1, R=.5), 0, 1 (P=2/3, R=1), 0 -> AP = .5*1 + .5*2/3 = 5/6
    assert average_precision(t, s) == pytest.approx(5 / 6)
    # trapezoid over (0,1) (.5,1) (.5,.5) (1,2/3) (1,.5): .5*1 + .5*(.5+2/3)/2 = 0.7916..
    assert pr_auc_trapezoid(t, s) == pytest.approx(0.5 + 0.5 * (0.5 + 2 / 3) / 2)
    # positive/negative pairs ordered correctly: (.9>.8)(.9>.1)(.7<.8)(.7>.1) -> 3/4
    assert roc_auc(t, s) == pytest.approx(0.75)
    c = confusion_at(t, s, 0.75)  # predicted harmful: .9 and .8
    assert (c["tp"], c["fp"], c["fn"], c["tn"]) == (1, 1, 1, 1)
    assert (c["precision"], c["recall"], c["f1"], c["fpr"]) == (0.5, 0.5, 0.5, 0.5)
    # score == threshold: safe by IRIS's rule (score > t, the default), harmful by ">="
    assert confusion_at([1, 0], [0.5, 0.2], 0.5)["tp"] == 0
    assert confusion_at([1, 0], [0.5, 0.2], 0.5, "ge")["tp"] == 1


def test_threshold_rule_on_discrete_scores():
    """A tie case by hand (discrete scores, as a moderation API's or neutral failures' 0.5):
    at t = 0.5, "gt" calls only the 1.0 harmful: TP 1, FN 2, FP 0, F1 = 2/4 = 0.50; "ge" calls
    every 0.5 too: TP 3, FP 1, FN 0, F1 = 6/7 = 0.857, FPR 1/2."""
    t, s = [1, 1, 1, 0, 0], [1.0, 0.5, 0.5, 0.5, 0.0]
    gt, ge = confusion_at(t, s, 0.5), confusion_at(t, s, 0.5, "ge")
    assert (gt["tp"], gt["fn"], gt["fp"], gt["f1"], gt["fpr"]) == (1, 2, 0, 0.5, 0.0)
    assert (ge["tp"], ge["fn"], ge["fp"], ge["fpr"]) == (3, 0, 1, 0.5)
    assert ge["f1"] == pytest.approx(6 / 7)
    with pytest.raises(ValueError, match="threshold rule"):
        confusion_at(t, s, 0.5, ">")


def test_ties():
    # all scores tied: one threshold, AP = prevalence, ROC AUC = 0.5
    t, s = [1, 0, 0, 1, 0], [0.3] * 5
    assert average_precision(t, s) == pytest.approx(0.4)
    assert roc_auc(t, s) == pytest.approx(0.5)
    precision, recall, _ = skm.precision_recall_curve(t, s)
    assert pr_auc_trapezoid(t, s) == pytest.approx(skm.auc(recall, precision))  # 0.7
    # a tie between a positive and a negative counts half in ROC AUC
    assert roc_auc([1, 0], [0.5, 0.5]) == 0.5


def test_one_class_is_nan_not_crash():
    for t in ([0, 0, 0], [1, 1, 1]):
        s = [0.2, 0.5, 0.9]
        assert math.isnan(average_precision(t, s))
        assert math.isnan(pr_auc_trapezoid(t, s))
        assert math.isnan(roc_auc(t, s))
        c = confusion_at(t, s, 0.5)  # threshold metrics stay defined
        assert 0 <= c["f1"] <= 1


def test_zero_division_is_zero():
    c = confusion_at([1, 0], [0.1, 0.2], 0.9)  # nothing predicted harmful
    assert (c["precision"], c["recall"], c["f1"], c["fpr"]) == (0.0, 0.0, 0.0, 0.0)
    c = confusion_at([0, 0], [0.1, 0.95], 0.9)  # no harmful items
    assert (c["precision"], c["recall"], c["f1"], c["fpr"]) == (0.0, 0.0, 0.0, 0.5)
    c = confusion_at([1, 1], [0.1, 0.95], 0.9)  # no safe items
    assert (c["precision"], c["recall"], c["fpr"]) == (1.0, 0.5, 0.0)


@pytest.mark.parametrize("fn", [average_precision, pr_auc_trapezoid, roc_auc])
def test_input_validation(fn):
    with pytest.raises(ValueError, match="NaN"):
        fn([0, 1], [0.1, float("nan")])
    with pytest.raises(ValueError, match="infinite"):
        fn([0, 1], [0.1, float("inf")])
    with pytest.raises(ValueError, match="3 items but y_score has 2"):
        fn([0, 1, 1], [0.1, 0.2])
    with pytest.raises(ValueError, match="only 0 and 1"):
        fn([0, 2], [0.1, 0.2])
    with pytest.raises(ValueError, match="empty"):
        fn([], [])
    with pytest.raises(ValueError, match="1-D"):
        fn([[0, 1]], [[0.1, 0.2]])
    with pytest.raises(ValueError, match="NaN"):
        confusion_at([0, 1], [0.1, float("nan")], 0.5)


def test_threshold_sweep_and_calibration():
    assert len(DEFAULT_THRESHOLDS) == 99
    # IRIS's grid: 0.01, then numpy.arange(0.02, 1.00, 0.01) as floats (test_best_threshold.py)
    assert DEFAULT_THRESHOLDS[0] == 0.01 and DEFAULT_THRESHOLDS[-1] == 0.9899999999999999
    t, s = [0, 0, 1, 1], [0.05, 0.3, 0.35, 0.9]
    sweep = threshold_sweep(t, s)
    assert [p["threshold"] for p in sweep] == list(DEFAULT_THRESHOLDS)
    assert sweep[0]["recall"] == 1.0 and sweep[-1]["recall"] == 0.0
    # F1 = 1 for thresholds in [0.30, 0.35) with score > t (the default): lowest grid point
    # 0.30; in (0.30, 0.35] with score >= t: 0.31
    assert best_f1_threshold(t, s) == 0.3
    assert best_f1_threshold(t, s, rule="ge") == 0.31
    # applied to other data: the calibration threshold, not the test data's own optimum
    test_t, test_s = [0, 1, 1], [0.2, 0.25, 0.8]
    c = calibrated_confusion(t, s, test_t, test_s)
    assert c["threshold"] == 0.3 and (c["tp"], c["fn"], c["fp"]) == (1, 1, 0)
    assert best_f1_threshold(test_t, test_s) != 0.3


def test_bootstrap_seeded_and_sane():
    rng = np.random.default_rng(3)
    t = rng.integers(0, 2, 200)
    s = np.clip(t * 0.3 + rng.random(200) * 0.7, 0, 1)
    a = bootstrap_ci(average_precision, t, s, n_resamples=300, seed=7)
    b = bootstrap_ci(average_precision, t, s, n_resamples=300, seed=7)
    assert a == b
    assert a["estimate"] == pytest.approx(skm.average_precision_score(t, s))
    assert a["low"] < a["estimate"] < a["high"] and a["n_valid"] == 300
    assert bootstrap_ci(average_precision, t, s, n_resamples=300, seed=8) != a
    # one-class resamples are dropped and counted, not crashed on
    small = bootstrap_ci(average_precision, [1, 0], [0.9, 0.1], n_resamples=200, seed=0)
    assert small["n_valid"] < 200 and small["estimate"] == 1.0


def test_paired_bootstrap():
    rng = np.random.default_rng(4)
    t = rng.integers(0, 2, 150)
    en = np.clip(t * 0.5 + rng.random(150) * 0.5, 0, 1)
    sea = np.clip(en + rng.normal(0, 0.2, 150), 0, 1)
    d = paired_bootstrap_ci(average_precision, t, en, t, sea, n_resamples=300, seed=1)
    assert d["estimate"] == pytest.approx(average_precision(t, en) - average_precision(t, sea))
    assert d["low"] <= d["estimate"] <= d["high"]
    same = paired_bootstrap_ci(average_precision, t, en, t, en, n_resamples=50, seed=1)
    assert (same["estimate"], same["low"], same["high"]) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="length"):
        paired_bootstrap_ci(average_precision, t, en, t[:-1], sea[:-1])
    with pytest.raises(ValueError, match="level"):
        bootstrap_ci(average_precision, t, en, level=95)
