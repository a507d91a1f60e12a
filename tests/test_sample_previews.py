"""The sample browsers (the viewer's samples page, the HTML report's sample list) preview each
text after the part it shares with other samples (issue 69: with a 5-shot prompt every question
of a subject looked the same until opened): the question, not the shared few-shot prefix."""

from __future__ import annotations

import re

from localeval.records.samples import MCQSample
from localeval.render.browser import browser_data
from localeval.web.pages import samples_page
from localeval.web.samples import browse

SHOTS = "".join(f"Question {i}: what is {i} + {i}?\nA. {i}\nB. {2 * i}\nAnswer: B\n\n"
                for i in range(1, 6))


def _samples() -> list[MCQSample]:
    questions = ("Which river flows through Taipei?", "Who wrote the Analects?")
    return [MCQSample(id=f"q{n}", subject="general", gold="A", pred="A", correct=True,
                      prompt=SHOTS + f"Question: {q}\nA. one\nB. two\nAnswer:")
            for n, q in enumerate(questions)]


def test_the_browser_data_starts_each_preview_after_the_shared_prefix():
    data = browser_data(_samples())
    k = [c["key"] for c in data["columns"]].index("prompt")
    starts = [row.get(str(k), 0) for row in data["starts"]]
    assert starts == [len(SHOTS), len(SHOTS)]  # at the line where the texts part


def test_the_viewer_previews_the_question_not_the_few_shot_prefix():
    html = samples_page({"run_id": "r1"}, browse(_samples(), {}), {})
    summaries = re.findall(r"<summary>(.*?)</summary>", html, re.S)
    # before: both summaries began "Question 1: what is 1 + 1?" (the shared 5-shot prefix)
    assert [s.startswith("…Question: Which river") or s.startswith("…Question: Who wrote")
            for s in summaries] == [True, True]


def test_the_report_script_reads_the_starts():
    from importlib.resources import files

    script = (files("localeval.report") / "assets" / "report.js").read_text(encoding="utf-8")
    assert "data.starts" in script
