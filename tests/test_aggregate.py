import math

import pytest

from localeval.data.catalog import TMLU
from localeval.metrics.mcq import accuracy, aggregate
from localeval.records import as_json
from localeval.records.mcq import MCQMetrics
from localeval.records.samples import MCQSample


def _samples(*rows: dict) -> list[MCQSample]:
    """Answered questions (gold A): ``correct`` as 1/0 for short."""
    return [MCQSample(id=i, gold="A", **{**row, "correct": bool(row["correct"])})
            for i, row in enumerate(rows)]


def test_accuracy_and_stderr_by_hand():
    row = accuracy([True, False, True, True])
    # p = 0.75, sample variance = 4/3 * 0.75 * 0.25 = 0.25, stderr = sqrt(0.25 / 4) = 0.25
    assert row == {"n": 4, "correct": 3, "acc": 0.75, "stderr": 0.25,  # + Wilson 95% interval
                   "low": pytest.approx(0.30064, abs=1e-5),
                   "high": pytest.approx(0.95441, abs=1e-5)}
    assert accuracy([])["acc"] is None and accuracy([True])["stderr"] is None


def test_discipline_micro_average_and_macro():
    samples = _samples(
        *[{"subject": "AST_civics", "correct": c, "pred": "A"} for c in (1, 1, 0, 0)],  # 2/4
        {"subject": "CAP_civics", "correct": 1, "pred": "A"},  # Soc: 3/5 pooled
        *[{"subject": "AST_physics", "correct": c, "pred": p} for c, p in ((1, "A"), (0, None))],
        {"subject": "driving_rule", "correct": 1, "pred": "B", "year": 2023},
    )
    m = aggregate(samples, TMLU.subjects, TMLU.disciplines)
    assert m["by_discipline"]["Social Science"]["acc"] == 3 / 5
    assert m["by_discipline"]["STEM"]["acc"] == 1 / 2
    assert m["by_discipline"]["STEM"]["n_unanswered"] == 1
    assert m["discipline_average"] == (3 / 5 + 1 / 2 + 1) / 3
    assert m["micro"]["acc"] == 5 / 8 and m["micro"]["n_unanswered"] == 1
    assert m["macro"]["acc"] == (0.5 + 1 + 0.5 + 1) / 4
    assert m["macro"]["stderr"] is None  # a one-question subject has no stderr
    assert m["by_level"]["high school"]["n"] == 6 and m["by_level"]["middle school"]["n"] == 1
    assert {k: v.data() for k, v in m.by_year.items()} == {
        "2023": {"n": 1, "correct": 1, "acc": 1.0, "stderr": None,
                 "low": pytest.approx(0.20655, abs=1e-5), "high": 1.0, "n_unanswered": 0,
                 "n_failed": 0}}
    assert list(m["by_discipline"]) == ["Social Science", "STEM", "Taiwan Specific"]
    # issue 71: the metrics are their record where computed, equal to what results.json reads
    # back (a subject's discipline and level kept beside its accuracy)
    assert MCQMetrics.model_validate(as_json(m)) == m
    assert m.by_subject["AST_physics"]["discipline"] == "STEM"


def test_paper_table3_average_is_mean_of_disciplines():
    # Claude-3-Opus, TMLU Table 3(a): the reported Average 73.59 is the mean of the 5 columns.
    cols = [83.06, 64.32, 75.93, 90.41, 54.23]
    assert math.isclose(sum(cols) / 5, 73.59, abs_tol=0.005)


def test_tmlu_catalog_matches_paper():
    subjects = TMLU.subjects.values()
    assert len(TMLU.subjects) == 37 and sum(s.n_questions for s in subjects) == 2981
    by = lambda attr, v: [s for s in subjects if getattr(s, attr) == v]  # noqa: E731
    assert [len(by("discipline", d)) for d in TMLU.disciplines] == [8, 14, 9, 3, 3]
    assert sum(s.n_questions for s in by("discipline", "STEM")) == 468
    assert [len(by("level", lv)) for lv in ("middle school", "high school", "professional")] == [9, 17, 11]
    assert sum(s.n_questions for s in by("level", "professional")) == 1672
