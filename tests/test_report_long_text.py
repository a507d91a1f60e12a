"""A sample with a very long unbroken text (issue 24: a 200,000-character token) is shown cut,
with a button for the rest, in headless Chromium; the full text is one click away."""

from __future__ import annotations

from headless_chromium import open_page

from localeval import evaluate
from localeval.backends.base import Generated
from localeval.demo.mcq import SAMPLE_MCQ
from localeval.report.html import write_report

TOKEN = "A" + "x" * 200_000


class Long:
    identity = {"backend": "long", "model": "long"}

    def run(self, requests, progress=None):
        return [Generated(text=TOKEN) for _ in requests]


def test_a_long_token_is_cut_with_show_all(tmp_path):
    run = evaluate(task="tmlu", model=Long(), data=str(SAMPLE_MCQ), method="generation",
                   limit=1, output=tmp_path / "run", quiet=True, store=False)
    report = write_report([run.folder])
    with open_page(report.as_uri(), tmp_path / "profile") as watched:
        page = watched.page
        samples = page.locator("section[data-section=samples]")
        # the model's output (a handle: it stays this element once its button is gone)
        output = samples.locator("details:has(button.all)").first.element_handle()
        output.query_selector("summary").click()
        pre = output.query_selector("pre")
        assert len(pre.text_content()) == 4001  # 4,000 characters and the ellipsis
        button = output.query_selector("button.all")
        assert button.text_content() == "Show all 200,001 characters"
        button.click()
        assert pre.text_content() == TOKEN
        assert samples.locator("button.all").count() == len(run.samples) - 1
        assert not watched.console_errors and all(u.startswith("file:")
                                                  for u in watched.requests)
