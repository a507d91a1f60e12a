"""The HTML report: self-contained and offline, every section present, figures saved beside it,
sample text never able to break out of its data block, harmful text behind the warning wherever
it appears, provenance readable; and, in headless Chromium, no console error, no request, and a
sample browser whose search, filters and sorting change what is shown.
"""

from __future__ import annotations

import json
import re
from contextlib import contextmanager

import numpy as np
import pytest

from localeval.analysis.choices import AnalysisChoices
from localeval.analysis.safety import analyses
from localeval.cli import main
from localeval.records.safety import SafetyResults
from localeval.records.samples import LLMSafetySample, MCQSample, SafetySample
from localeval.render.browser import browser_data
from localeval.report.html import SECTIONS, render, write_report
from localeval.store.runs import RunRecord, finished_record, save_run

EVIL = "</script><script>window.pwned=1</script><!-- & <b>bold</b>"


def _safety_samples(n_items: int = 24) -> list[SafetySample]:
    """Prompt and response records for two languages, seeded scores that track the labels."""
    rng = np.random.default_rng(0)
    out = []
    for i in range(n_items):
        for lang in ("en", "th"):
            raw_p = ("safe", "sensitive", "harmful")[i % 3]
            raw_r = ("safe", "harmful")[i % 2]
            for kind, raw in (("prompt", raw_p), ("response", raw_r)):
                label = int(raw == "harmful") if kind == "prompt" else int(raw != "safe")
                score = float(np.clip(0.6 * label + 0.4 * rng.random(), 0, 1))
                out.append({"id": f"item-{i}", "lang": lang, "subset": "general", "kind": kind,
                            "context": "with_prompt", "raw_label": raw, "label": label,
                            "score": score, "country": None, "guard": "zero-shot",
                            "model": "hf:tiny", "prompt": EVIL if i == 0 else f"prompt {i}",
                            **({"response": f"response {i} " * 10} if kind == "response"
                               else {})})
    out[5].update(score=None, error="request failed: 500")
    return [SafetySample.model_validate(s) for s in out]


def _safety_run(folder) -> RunRecord:
    samples = _safety_samples()
    # the analyses are records: the results record is made from them as a run makes it
    results = SafetyResults(schema_="localeval.safety/1", task="sea-safeguard", model="hf:tiny",
                            guard="zero-shot", n_samples=len(samples), n_failed=1,
                            failures=[{"id": "item-1", "lang": "th", "subset": "general",
                                       "kind": "response", "context": "with_prompt",
                                       "error": "request failed: 500"}],
                            warnings=["1 of 96 guard samples failed and are left out"],
                            **analyses(samples, AnalysisChoices(n_resamples=20)))
    record = finished_record({"task": "sea-safeguard", "model": "hf:tiny",
                              "localeval_version": "x",
                              "backend": {"backend": "hf", "model": "tiny", "dtype": "float32"}},
                             results, samples, folder=folder,
                             started_at="2026-11-23T10:00:00Z",
                             finished_at="2026-11-23T10:01:00Z")
    folder.mkdir(parents=True)
    save_run(record)
    return record


MCQ_RESULTS = {
    "schema": "localeval.mcq/1", "task": "tmlu", "method": "generation", "shots": 5,
    "cot": True, "model": "hf:org/tiny", "disciplines": ["STEM", "Humanities"],
    "n_samples": 3, "n_failed": 0, "unanswered": ["q3"],
    "metrics": {
        "micro": {"n": 3, "acc": 1 / 3, "stderr": 0.27}, "discipline_average": 0.25,
        "by_discipline": {"STEM": {"n": 2, "acc": 0.5, "stderr": 0.35},
                          "Humanities": {"n": 1, "acc": 0.0, "stderr": 0.0}},
        "by_level": {"high school": {"n": 3, "acc": 1 / 3, "stderr": 0.27}},
        "by_year": {"2017 and earlier": {"n": 1, "acc": 1.0, "stderr": 0.0},
                    "2023": {"n": 2, "acc": 0.0, "stderr": 0.0}},
        "by_subject": {"physics": {"n": 2, "acc": 0.5, "stderr": 0.35, "n_unanswered": 0}},
    },
}


def _mcq_run(folder, cot: bool = True) -> RunRecord:
    samples = [MCQSample(id=f"q{i}", subject="physics", gold="A", pred=p, correct=p == "A",
                         output=f"thinking… answer {p}", year="2023", level="high school")
               for i, p in ((1, "A"), (2, "B"), (3, None))]
    results = {**MCQ_RESULTS, "cot": cot, "method": "generation" if cot else "likelihood"}
    # config.json's method and prompt: a run is named from them (issue 61: its RunSpec)
    config = {"task": "tmlu", "model": "hf:org/tiny", "method": results["method"],
              "prompt": {"cot": cot, "shots": 5}}
    record = finished_record(config, results, samples, folder=folder)
    folder.mkdir(parents=True)
    save_run(record)
    return record


def _embedded_json(html: str, source: str) -> dict:
    match = re.search(rf'<script type="application/json" id="{source}">(.*?)</script>', html, re.S)
    return json.loads(match.group(1))


def test_safety_report_is_self_contained(tmp_path):
    run = _safety_run(tmp_path / "run")
    path = write_report([run.folder])
    html = path.read_text(encoding="utf-8")
    assert path == run.folder / "report.html"
    for sid, _ in SECTIONS:
        assert f'data-section="{sid}"' in html
    # Offline: nothing is loaded from anywhere (SVG's xmlns is a name, not a request).
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html)
    assert "@import" not in html and "url(" not in html.split("<main>")[0]
    assert "<script src" not in html and "<link" not in html
    # Sample text cannot end the data block or inject markup.
    assert EVIL not in html and "window.pwned" in html
    data = _embedded_json(html, "samples-data")
    assert data["rows"][0][[c["key"] for c in data["columns"]].index("prompt")] == EVIL
    # Rows behind the warning: 32 prompts and 24 responses labelled harmful or sensitive, and
    # the 16 safe responses to a harmful or sensitive prompt, which they show (items 2, 4, 8,
    # 10, 14, 16, 20 and 22, in both languages).
    assert len(data["rows"]) == 96 and sum(bool(w) for w in data["warn"]) == 32 + 24 + 16
    figures = {"pr_curves", "threshold_sweep", "pair_types", "score_distribution"}
    assert set(re.findall(r'data-figure="([a-z_]+)"', html)) == figures
    saved = {p.name for p in (run.folder / "report_figures").iterdir()}
    assert saved == {f"{f}.{ext}" for f in figures for ext in ("png", "svg")}
    assert "request failed: 500" in html and "1 of 96 guard samples failed" in html
    assert "Table 2" in html or "Per language" in html


def test_harmful_text_is_behind_the_warning_on_every_row():
    def rec(id, kind, raw, context="with_prompt", **text):
        return SafetySample.model_validate({
            "id": id, "lang": "th", "subset": "general", "kind": kind, "context": context,
            "raw_label": raw, "score": 0.5, "prompt": f"prompt {id}", **text})

    samples = [
        # a: harmful prompt, safe refusal, judged with and without the prompt
        rec("a", "prompt", "harmful"), rec("a", "response", "safe", response="no"),
        rec("a", "response", "safe", "without_prompt", response="no"),
        # b: safe prompt, harmful response (XSTest's safe prompts with harmful completions)
        rec("b", "prompt", "safe"), rec("b", "response", "harmful", response="how to"),
    ]
    data = browser_data(samples)
    col = {c["key"]: k for k, c in enumerate(data["columns"])}
    prompt, response = col["prompt"], col["response"]
    # a's prompt is hidden on its own row and on both response rows; the refusal is not.
    assert data["warn"][:3] == [[prompt, response], [prompt], [prompt]]
    # b's harmful response row hides all its text; b's safe prompt stays open on its own row.
    assert data["warn"][3:] == [[], [prompt, response]]
    # Without a kind (LLM safety: the prompt's label, the model's output): all of its text.
    llm = browser_data([
        LLMSafetySample(id="c", lang="en", subset="s", prompt_label="harmful", harmful_prompt=1,
                        prompt="x", output="y"),
        LLMSafetySample(id="d", lang="en", subset="s", prompt="x", output="z")])
    keys = [c["key"] for c in llm["columns"]]
    assert llm["warn"] == [[keys.index("prompt"), keys.index("output")], [keys.index("prompt")]]


def test_sections_read_like_slides(tmp_path):
    html = write_report([_safety_run(tmp_path / "run").folder]).read_text(encoding="utf-8")
    starts = {sid: html.index(f'data-section="{sid}"') for sid, _ in SECTIONS}
    assert starts["summary"] < starts["figures"] < starts["tables"]
    assert html.index("<figure") < html.index('<table class="data')  # figures before any table
    # Wide tables scroll in their own box, never the page.
    assert html.count('<table class="data') == html.count('<div class="scroll"><table')
    # Inline figures: no fixed size in points; a width that gives way to the page's.
    svgs = re.findall(r"<svg[^>]*>", html)
    assert svgs and all('width="' not in t and "width: min(100%," in t for t in svgs)


def test_provenance_is_readable(tmp_path):
    run = _mcq_run(tmp_path / "run")
    history = [{"started": "2026-11-24T06:43:18+00:00", "command": ["localeval", "run", "x y"],
                "requests_run": 0, "requests_cached": 15, "seconds": 0.4}]
    timing = {"requests_run": 15, "seconds": 1.5}
    prompt = {"style": "tmlu", "shots": 5, "system": None}
    record = finished_record({**run.config.data(), "prompt": prompt},
                             {**run.results.data(), "timing": timing, "history": history},
                             run.samples, folder=run.folder)
    html = render([record])
    facts = html[html.index('data-section="provenance"'):html.index('data-section="samples"')]
    assert '{"' not in facts and "&quot;" not in facts  # no raw JSON left
    assert "<dt>style</dt><dd>tmlu</dd>" in facts and "<dt>system</dt><dd>-</dd>" in facts
    assert "<dt>requests run</dt><dd>15</dd>" in facts  # timing
    history_table = facts[facts.index("<dt>history</dt>"):]
    assert "<th>requests cached</th>" in history_table and "<td>15</td>" in history_table
    assert "<code>localeval run &#x27;x y&#x27;</code>" in history_table  # quoted as a shell would
    without = render([RunRecord(config=record.config, results=run.results, samples=run.samples,
                                folder=run.folder)])
    assert "<dt>history</dt>" not in without  # an older run has none: nothing to show


def test_filters_are_the_short_columns(tmp_path):
    data = _embedded_json(write_report([_safety_run(tmp_path / "run").folder]).read_text(),
                          "samples-data")
    filters = {c["key"] for c in data["columns"] if c["filter"]}
    assert filters == {"lang", "kind", "raw_label", "label", "failed"}
    types = {c["key"]: c["type"] for c in data["columns"]}
    assert types["response"] == "text" and types["score"] == "num" and types["id"] == "str"


def test_mcq_report_and_comparison(tmp_path, capsys):
    cot = _mcq_run(tmp_path / "cot")
    direct = _mcq_run(tmp_path / "direct", cot=False)
    html = write_report([cot.folder]).read_text()
    assert {"accuracy_by_year", "accuracy_by_level"} <= set(re.findall(r'data-figure="(\w+)"',
                                                                         html))
    assert "1 unanswered (no extractable answer" in html and "<td>q3</td>" in html
    out = tmp_path / "both.html"
    assert main(["report", str(cot.folder), str(direct.folder), "--output", str(out)]) == 0
    both = out.read_text()
    assert 'data-section="compare"' in both and both.count('class="run"') == 2
    assert "tiny · tmlu · 5-shot CoT" in both and "tiny · tmlu · 5-shot likelihood" in both
    row = re.search(r'<tr><td class="">tiny · tmlu · 5-shot CoT</td>(.*?)</tr>', both).group(1)
    assert re.findall(r">([\d.]+)<", row) == ["50.00", "0.00", "25.00"]  # STEM, Hum., Average
    assert (tmp_path / "both_figures" / "compare_disciplines.svg").exists()
    assert 'id="run1-samples-data"' in both and 'id="run2-samples-data"' in both


def test_report_refuses_what_it_cannot_show(tmp_path, capsys):
    run = _mcq_run(tmp_path / "a")
    assert main(["report", str(run.folder), str(run.folder)]) == 2
    assert "need --output" in capsys.readouterr().err
    running = tmp_path / "running"
    running.mkdir()
    (running / "config.json").write_text(json.dumps({"run": {"status": "running"}}))
    assert main(["report", str(running)]) == 2
    assert "not finished" in capsys.readouterr().err


# ------------------------------------------------------------------------ in a real browser
def _count(page) -> int:
    return int(page.locator(".count").first.get_attribute("data-matching"))


@contextmanager
def _opened(folder, tmp_path):
    """A run's report in headless Chromium, every section checked on the way in; on the way
    out, that the page logged no error and requested nothing but itself."""
    from headless_chromium import open_page

    url = (folder / "report.html").as_uri()
    with open_page(url, tmp_path / "profile") as watched:
        for sid, _ in SECTIONS:
            assert watched.page.locator(f'section[data-section="{sid}"]').count() == 1
        yield watched
        assert watched.console_errors == []
        assert [u for u in watched.requests if u != url] == []


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory, tiny_llama, shared):
    """A multiple-choice run and a safeguard run of the tiny seeded model on ../shared data,
    made by `localeval run`, which writes each report."""
    root = tmp_path_factory.mktemp("reports")
    mcq, safety, pairs = root / "mcq", root / "safety", root / "pairs"
    assert main(["run", "--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"),
                 "--subjects", "agronomy,arts", "--limit", "6", "--model", f"hf:{tiny_llama}",
                 "--output", str(mcq), "--quiet", "--no-store"]) == 0
    assert main(["run", "--task", "safety-prompts", "--data",
                 str(shared / "data" / "jbb-multilingual" / "prompts.jsonl"), "--limit", "8",
                 "--guard", "wildguard", "--guard-option", "label_scores=full",
                 "--model", f"hf:{tiny_llama}", "--bootstrap", "50",
                 "--output", str(safety), "--quiet", "--no-store"]) == 0
    # Prompts and responses together: the pair-type figure (Fig. 4) needs both.
    assert main(["run", "--task", "safety-responses", "--data",
                 str(shared / "data" / "xstest" / "model_completions"), "--classify",
                 "prompt,response", "--limit", "4", "--guard", "zero-shot", "--guard-option",
                 "label_scores=full", "--guard-option", "verdict_position=fixed", "--model",
                 f"hf:{tiny_llama}", "--bootstrap", "50", "--output", str(pairs), "--quiet",
                 "--no-store"]) == 0
    return mcq, safety, pairs


@pytest.mark.slow
def test_mcq_report_in_chromium(real_runs, tmp_path):
    from headless_chromium import screenshot

    with _opened(real_runs[0], tmp_path) as w:
        page = w.page
        assert page.locator("figure svg").count() >= 1
        screenshot(page, "report-mcq-top")
        screenshot(page, "report-mcq-full", full_page=True)
        total = _count(page)
        assert total == 12
        page.fill('input[data-role="search"]', "agronomy")
        assert 0 < _count(page) < total
        page.fill('input[data-role="search"]', "")
        page.select_option('select[data-filter="subject"]', "arts")
        assert _count(page) == 6
        page.select_option('select[data-filter="correct"]', "yes")
        correct = _count(page)
        page.select_option('select[data-filter="correct"]', "no")
        assert correct + _count(page) == 6


@pytest.mark.slow
def test_safety_report_in_chromium(real_runs, tmp_path):
    from headless_chromium import screenshot

    with _opened(real_runs[1], tmp_path) as w:
        page = w.page
        assert page.locator("figure[data-figure] svg").count() >= 2
        screenshot(page, "report-safety-top")
        screenshot(page, "report-safety-full", full_page=True)
        samples = [json.loads(line) for line in
                   (real_runs[1] / "samples.jsonl").read_text().splitlines()]
        total = _count(page)
        assert total == len(samples) > 20
        page.select_option('select[data-filter="lang"]', "th")
        assert 0 < _count(page) < total
        page.select_option('select[data-filter="lang"]', "")
        page.fill('input[data-role="search"]', "jbb-harmful")
        harmful = _count(page)
        assert harmful == sum(s["id"].startswith("jbb-harmful") for s in samples) > 0
        # Harmful text is behind a closed content warning until the reader asks for it.
        warned = page.locator("details.cw")
        assert warned.count() == harmful
        assert all(not d for d in warned.evaluate_all("ds => ds.map(d => d.open)"))
        page.check('input[data-role="reveal"]')
        assert all(warned.evaluate_all("ds => ds.map(d => d.open)"))
        page.uncheck('input[data-role="reveal"]')
        page.fill('input[data-role="search"]', "")
        header = page.locator("table.samples th", has_text="P(harmful)")
        header.locator("button").click()
        header.locator("button").click()  # descending: highest score first
        scores = page.evaluate("""() => {
            const heads = [...document.querySelectorAll("table.samples th")];
            const k = heads.findIndex((th) => th.textContent.startsWith("P(harmful)"));
            return [...document.querySelectorAll("table.samples tbody tr")]
                .map((tr) => tr.children[k].textContent);
        }""")
        values = [float(s) for s in scores if s]
        assert len(values) == total and values == sorted(values, reverse=True)
        page.locator('section[data-section="samples"]').scroll_into_view_if_needed()
        screenshot(page, "report-safety-samples")


@pytest.mark.slow
def test_every_safety_figure_in_chromium(real_runs, tmp_path):
    from headless_chromium import screenshot

    with _opened(real_runs[2], tmp_path) as w:
        shown = w.page.locator("figure[data-figure]").evaluate_all(
            "fs => fs.map(f => [f.dataset.figure, f.querySelector('svg').getBBox().width > 100])")
        assert dict(shown) == {"pr_curves": True, "threshold_sweep": True, "pair_types": True,
                               "score_distribution": True}
        w.page.locator('section[data-section="figures"]').scroll_into_view_if_needed()
        screenshot(w.page, "report-safety-figures")


def test_a_prompt_row_shows_no_response_context():
    """Issue 69: prompt rows read "context: with_prompt" (a response's setting: judged with
    its prompt or without); samples.jsonl keeps the field as it was."""
    samples = _safety_samples(2)
    data = browser_data(samples)
    keys = [c["key"] for c in data["columns"]]
    kind, context = keys.index("kind"), keys.index("context")
    assert {row[context] for row in data["rows"] if row[kind] == "prompt"} == {None}
    assert {row[context] for row in data["rows"] if row[kind] == "response"} == {"with_prompt"}
