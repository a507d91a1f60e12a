"""Metrics as scikit-learn writes them (issue 31 item 2): arguments validated at the boundary,
docstring examples that run, and a warning — carried in results and shown beside the number —
where a ranking metric says nothing (one class, no positives, every score equal)."""

from __future__ import annotations

import doctest
import math
from pathlib import Path

import pytest

import localeval.metrics.classification as classification
from localeval import evaluate
from localeval.backends.base import NextLogprobs
from localeval.demo.safety import SAMPLE_SAFETY
from localeval.errors import UndefinedMetricWarning
from localeval.metrics.classification import (
    average_precision,
    confusion_at,
    measured,
    pr_auc_trapezoid,
    roc_auc,
    threshold_sweep,
)
from localeval.report.console import print_results
from localeval.report.html import write_report


@pytest.mark.parametrize("module", [classification])
def test_docstring_examples_run(module):
    failed, attempted = doctest.testmod(module)
    assert attempted >= 8 and failed == 0


CASES = {"one class (no safe items)": ([1, 1, 1], [0.2, 0.5, 0.9], "no safe items"),
         "no positives": ([0, 0, 0], [0.2, 0.5, 0.9], "no harmful items"),
         "every score equal": ([0, 1, 1, 0, 1], [0.5] * 5, "every score equal (0.5)")}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("metric", [pr_auc_trapezoid, average_precision, roc_auc])
def test_each_meaningless_case_warns(case, metric):
    labels, scores, reason = CASES[case]
    with pytest.warns(UndefinedMetricWarning, match=reason.replace("(", r"\(").replace(")",
                                                                                       r"\)")):
        value = metric(labels, scores)
    assert math.isnan(value) == (case != "every score equal")
    assert measured(metric, labels, scores)[1].startswith(reason)


def test_constant_scores_give_the_number_the_formula_gives_and_say_so():
    # the trapezoid of a constant scorer is (1 + prevalence) / 2: 0.8 for 3 harmful of 5
    assert measured(pr_auc_trapezoid, [0, 1, 1, 0, 1], [0.5] * 5) == pytest.approx(
        (0.8, "every score equal (0.5), so the value shows only the share harmful"))


def test_arguments_are_validated_at_the_boundary():
    with pytest.raises(ValueError, match="threshold rule must be one of gt, ge"):
        confusion_at([0, 1], [0.2, 0.7], 0.5, rule="gte")
    with pytest.raises(ValueError, match="a threshold must be a finite number"):
        confusion_at([0, 1], [0.2, 0.7], math.nan)
    with pytest.raises(ValueError, match="no thresholds"):
        threshold_sweep([0, 1], [0.2, 0.7], thresholds=())
    with pytest.raises(ValueError, match="y_true must hold only 0 and 1"):
        roc_auc([0, 2], [0.2, 0.7])


class ConstantGuard:
    """A guard model whose two labels always tie: every score 0.5."""

    identity = {"backend": "constant", "model": "constant"}

    def max_context(self):
        return None

    def count_tokens(self, prompt):
        return 0

    def run(self, requests, progress=None):
        return [NextLogprobs(logprobs={r.candidates[0]: -0.7, r.candidates[1]: -0.7})
                for r in requests]


def test_a_constant_guard_run_carries_the_warning_into_results_and_the_report(
        tmp_path, capsys, monkeypatch):
    # before: PR-AUC 75.0-83.3 per cell, and nothing said the guard ranked nothing
    # label_scores=full and verdict_position=fixed: the stand-in gives the labels' log-probs at
    # one position, not their ranks (which finding the first labelled position needs)
    record = evaluate(task="sea-safeguard", model=ConstantGuard(), guard="zero-shot",
                      guard_options={"label_scores": "full", "verdict_position": "fixed"},
                      data=Path(str(SAMPLE_SAFETY)),
                      output=tmp_path / "run", n_resamples=0)
    results = record.results
    assert all(r.warning and r.warning.startswith("every score equal (0.5)")
               for r in results.overall + results.per_language)
    cells = results.table2.rows[0].warnings
    assert cells["prompt/general/sea"]["th"].startswith("every score equal")
    assert cells["prompt/cultural-cg/en"]["Thailand"].startswith("every score equal")
    capsys.readouterr()
    monkeypatch.setenv("COLUMNS", "250")
    print_results(record.results, everything=True)
    shown = capsys.readouterr().out
    assert "⚠" in shown and "every score equal (0.5), so the value shows only the share " \
        "harmful: prompt all" in " ".join(shown.split())
    html = write_report([tmp_path / "run"]).read_text()
    assert "75.0 ⚠" in html and "so the value shows only the share harmful" in html
