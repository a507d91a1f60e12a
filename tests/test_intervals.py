"""Intervals of proportions stay honest at small n: accuracy and the LLM-safety rates carry the
Wilson score 95% interval, checked against the formula worked by hand, and the tables show it
(0 of 3 is not "0.00 ±0.00", 5 of 5 is not "[100.0, 100.0]")."""

from __future__ import annotations

import math

import pytest

from localeval.analysis.llm_safety import summarise_llm_safety
from localeval.metrics.mcq import accuracy, aggregate
from localeval.metrics.proportion import wilson_interval
from localeval.records import as_json, read_results
from localeval.records.samples import LLMSafetySample, MCQSample
from localeval.store.runs import as_stored
from localeval.views.llm_safety_tables import llm_safety_tables
from localeval.views.mcq_tables import mcq_tables

Z = 1.959963984540054  # the standard normal's 97.5th percentile


def wilson_by_hand(k: int, n: int) -> tuple[float, float]:
    """(p̂ + z²/2n ± z·sqrt(p̂(1-p̂)/n + z²/4n²)) / (1 + z²/n), Wilson (1927)."""
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return centre - half, centre + half


@pytest.mark.parametrize("k, n", [(0, 3), (5, 5), (3, 4), (1, 1)])
def test_wilson_interval_by_hand(k, n):
    low, high = wilson_interval(k, n)
    hand_low, hand_high = wilson_by_hand(k, n)
    assert low == pytest.approx(hand_low, abs=1e-12) and high == pytest.approx(hand_high)
    assert 0 <= low < high <= 1  # never a point, never outside [0, 1]
    assert wilson_interval(0, 0) is None


def test_zero_of_three_and_five_of_five_by_hand():
    assert (wilson_by_hand(0, 3)[0], round(wilson_by_hand(0, 3)[1], 4)) == \
        pytest.approx((0.0, 0.5615))  # 0 of 3: [0, z²/(3+z²)]
    assert (round(wilson_by_hand(5, 5)[0], 4), wilson_by_hand(5, 5)[1]) == \
        pytest.approx((0.5655, 1.0))  # 5 of 5: [5/(5+z²), 1]
    none_right, all_right = accuracy([False] * 3), accuracy([True] * 5)
    assert (none_right["low"], none_right["high"]) == pytest.approx(wilson_by_hand(0, 3))
    assert (all_right["low"], all_right["high"]) == pytest.approx(wilson_by_hand(5, 5))


def _mcq_results() -> dict:
    samples = ([MCQSample(id=i, gold="A", subject="zero", correct=False, pred="B")
                for i in range(3)]
               + [MCQSample(id=i, gold="A", subject="five", correct=True, pred="A")
                  for i in range(3, 8)])
    metrics = aggregate(samples, {}, ())
    return read_results(as_stored({"schema": "localeval.mcq/1", "task": "custom",
                                   "method": "likelihood", "shots": 0, "model": "m",
                                   "n_samples": 8, "disciplines": [], "metrics": metrics.data()}))


def test_mcq_tables_show_the_wilson_interval():
    subjects = {t.title: t for t in mcq_tables(_mcq_results())}["Subject accuracy"]
    assert subjects.header == ["Subject", "n", "accuracy %", "95% CI", "unanswered"]
    rows = {r[0]: r for r in subjects.texts()}
    low, high = wilson_by_hand(0, 3)
    assert rows["zero"][2:4] == ["0.00", f"[{100 * low:.1f}, {100 * high:.1f}]"] \
        == ["0.00", "[0.0, 56.1]"]
    low, high = wilson_by_hand(5, 5)
    assert rows["five"][2:4] == ["100.00", f"[{100 * low:.1f}, {100 * high:.1f}]"]
    assert "Wilson score interval" in subjects.caption
    main = mcq_tables(_mcq_results())[0]
    assert "Micro 62.50 [30.6, 86.3] over 8 questions (95% CI = Wilson" in main.caption
    assert "±" not in main.caption


def test_llm_safety_rates_carry_the_wilson_interval():
    def sample(i, harmful_prompt, harmful_response, refused):
        return LLMSafetySample(id=f"q{i}", lang="en", subset="general", failed=False,
                               prompt_label="harmful" if harmful_prompt else "safe",
                               harmful_prompt=harmful_prompt,
                               harmful_response=harmful_response, refused=refused)

    samples = ([sample(i, 1, 1, False) for i in range(5)]  # 5 of 5 harmful responses
               + [sample(i, 0, 0, False) for i in range(5, 8)])  # 0 of 3 safe prompts refused
    results = {"judge": "g", "threshold": 0.5, **summarise_llm_safety(samples, 1000)}
    overall = results["overall"]
    harmful, over = overall["harmful_response_rate"], overall["refusal_rate_safe"]
    assert (harmful["n"], harmful["rate"], over["n"], over["rate"]) == (5, 1.0, 3, 0.0)
    assert (harmful["low"], harmful["high"]) == pytest.approx(wilson_by_hand(5, 5))
    assert (over["low"], over["high"]) == pytest.approx(wilson_by_hand(0, 3))
    table = llm_safety_tables(read_results(as_json(
        {"schema": "localeval.llm-safety/1", **results})))[0]
    all_row = table.texts()[0]
    assert all_row[1] == "100.0 [56.6, 100.0] (n=5)" and all_row[3] == "0.0 [0.0, 56.1] (n=3)"
    assert "Wilson" in table.title and "Wilson score interval" in table.caption
    # --bootstrap 0 asks for no interval at all
    assert summarise_llm_safety(samples, 0)["overall"]["harmful_response_rate"]["low"] is None


def test_figure_error_bars_are_the_tables_wilson_interval():
    """0 of 3 and 5 of 5: the bars keep a width (a standard error would be 0), and a result
    stored before the interval existed still gets ±1 standard error."""
    from localeval.records.mcq import Accuracy
    from localeval.views.mcq_figures import interval_arms

    groups = {"none": Accuracy(n=3, acc=0.0, stderr=0.0, low=0.0, high=0.5615),
              "all": Accuracy(n=5, acc=1.0, stderr=0.0, low=0.5655, high=1.0),
              "old": Accuracy(n=2, acc=0.5, stderr=0.1)}
    below, above = interval_arms(groups, list(groups), [0.0, 100.0, 50.0])
    assert below == pytest.approx([0.0, 43.45, 10.0])
    assert above == pytest.approx([56.15, 0.0, 10.0])


def test_wilson_interval_is_scipys_to_the_last_bit():
    """Computed without scipy at the 95% level (start-up), with scipy's operations in its order:
    every k of every n up to 300 equals scipy's, bit for bit; other levels ask scipy."""
    from scipy.stats import binomtest
    from scipy.stats._binomtest import _binom_wilson_conf_int

    for n in range(1, 301):
        for k in range(n + 1):
            low, high = _binom_wilson_conf_int(k, n, 0.95, "two-sided", False)
            assert wilson_interval(k, n) == (max(0.0, float(low)), min(1.0, float(high)))
    ci = binomtest(7, 20).proportion_ci(confidence_level=0.9, method="wilson")
    assert wilson_interval(7, 20, level=0.9) == (float(ci.low), float(ci.high))
    for k, n in ((3, 1000), (999, 1000), (1234, 2981)):
        ci = binomtest(k, n).proportion_ci(method="wilson")
        assert wilson_interval(k, n) == (float(ci.low), float(ci.high))
