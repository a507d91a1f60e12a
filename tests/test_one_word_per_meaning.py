"""Issue 69: one word per meaning, across the console, the report, the viewer and results.json
(their records' field names stay): "failed" is a request that failed (left out, counted in
``n_failed``), "unanswered" a question answered with no letter extracted (counted wrong, listed
in ``unanswered``); ``only`` is a column of one run's questions, and one PR-AUC is never named
like the other."""

from __future__ import annotations

from offline_runs import mcq_run, safeguard_run

from localeval.cli import main
from localeval.records.samples import MCQSample
from localeval.render.browser import browser_data


def _answered_and_unanswered() -> list[MCQSample]:
    return [MCQSample(id="q1", subject="physics", gold="A", pred="A", correct=True,
                      output="answer A"),
            MCQSample(id="q2", subject="physics", gold="A", pred=None, correct=False,
                      output="thinking…", error="no answer letter found")]


def test_a_question_with_no_answer_extracted_browses_as_unanswered_not_failed():
    data = browser_data(_answered_and_unanswered())
    keys = [c["key"] for c in data["columns"]]
    # before: a "failed" column, true for q2, while results.json says n_failed: 0
    assert "failed" not in keys
    k = keys.index("unanswered")
    assert [row[k] for row in data["rows"]] == [False, True]


def test_a_failed_request_still_browses_as_failed():
    failed = MCQSample(id="q3", subject="physics", gold="A", pred=None, correct=None,
                       failed=True, error="HTTP 500")
    data = browser_data([*_answered_and_unanswered(), failed])
    keys = [c["key"] for c in data["columns"]]
    rows = data["rows"]
    assert [r[keys.index("failed")] for r in rows] == [None, None, True]
    assert [r[keys.index("unanswered")] for r in rows] == [False, True, False]


def test_compare_says_only_of_one_thing(tmp_path, capsys):
    a, b = mcq_run(tmp_path / "a"), mcq_run(tmp_path / "b")
    capsys.readouterr()
    assert main(["compare", str(a.folder), str(b.folder)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    # before: "A only"/"B only" columns (right in one run only) beside "questions in one run
    # only" (asked in one run): the columns now say what they count
    assert "A only" not in out and "one run only" not in out
    assert "the other run lacks: 0 (A), 0 (B)" in out


def _shown(capsys, folder) -> str:
    capsys.readouterr()
    assert main(["show", str(folder)]) == 0
    return capsys.readouterr().out


def test_each_pr_auc_estimator_has_its_own_name(tmp_path, capsys):
    # before: the trapezoid's tables titled PR-AUC with an "AUPRC" column, --auprc ap's
    # titled "AUPRC (average precision)": one word for two estimators
    trapezoid = _shown(capsys, safeguard_run(tmp_path / "trapezoid").folder)
    ap = _shown(capsys, safeguard_run(tmp_path / "ap", auprc="ap").folder)
    assert "AUPRC" not in trapezoid and "AUPRC" not in ap
    assert "PR-AUC" not in ap and "AP (average precision)" in ap
    assert "PR-AUC (trapezoid" in trapezoid


def test_a_limited_run_says_its_samples_are_ids_times_languages(tmp_path, capsys):
    # before: "64 samples; ..." from --limit 2, with no word of why
    out = " ".join(_shown(capsys, safeguard_run(tmp_path / "run", limit=2).folder).split())
    assert ("64 samples (--limit 2: at most 2 item ids per subset, each in every one of its "
            "languages: en, id, ms, my, ta, th, tl, vi)") in out
