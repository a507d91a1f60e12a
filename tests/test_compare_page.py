"""Two runs compared, as a safety team reads them (issue 51 item 5, and item 1's naming in the
report): the viewer's compare page and the report of two runs hold ``localeval compare``'s
comparison as HTML tables (per language for safeguard runs, per subject for multiple-choice
runs) with its figure, never a terminal box in a ``<pre>``; two runs of one model, task and
method get different names in legends and rows; a run is named by its guard and the options
that change its protocol. The compare page in Chromium: ``test_compare_page_in_chromium``."""

from __future__ import annotations

import json
import re
import threading
from html import unescape

import pytest
from offline_runs import AlwaysLetter, safeguard_run
from starlette.testclient import TestClient

from localeval import evaluate
from localeval.cli import main
from localeval.records.run import RunConfig
from localeval.store.results_db import folder_id
from localeval.store.runs import RunRecord, load_run
from localeval.web.app import make_app, make_server
from localeval.web.catalog import Catalog

LANGS = ("en", "id", "ms", "my", "ta", "th", "tl", "vi")
# issue 61: the name says the data is the sample's, not the Hub's
NAME = "zero-shot on mymodel · sea-safeguard · data safety/items.jsonl"


class Mine(AlwaysLetter):
    """Answers ``letter``, and is called mymodel whatever it answers."""

    def __init__(self, letter: str):
        super().__init__(letter)
        self.identity = {"backend": "always", "model": "mymodel"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Zero-shot and Llama Guard 3 on one model; the same exam answered twice by one model."""
    root = tmp_path_factory.mktemp("compare")
    store = root / "store.sqlite"
    safeguard_run(root / "zero-shot", store=store, model_name="mymodel")
    safeguard_run(root / "llamaguard3", store=store, model_name="mymodel", guard="llamaguard3")
    rows = [{"id": f"{s}{i}", "subject": s, "question": f"Q{i}?", "A": "a", "B": "b",
             "C": "c", "D": "d", "answer": a}
            for s, answers in {"arts": "ABAB", "law": "BBAA"}.items()
            for i, a in enumerate(answers)]
    (root / "exam.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for folder, letter in (("first", "A"), ("second", "B")):
        evaluate(task="my-exam", model=Mine(letter), data=root / "exam.jsonl", shots=0,
                 output=root / folder, quiet=True, store=store)
    return root


def _compare_url(root, a: str, b: str) -> str:
    return f"/compare?a={folder_id(root / a)}&b={folder_id(root / b)}"


@pytest.fixture(scope="module")
def client(runs):
    return TestClient(make_app(Catalog(runs / "store.sqlite", [])), base_url="http://127.0.0.1")


def _table(html: str, title: str) -> str:
    """The HTML table under the heading that holds ``title``."""
    found = re.search(r"<h3>[^<]*" + re.escape(title) + r"[^<]*</h3>.*?</table>", html, re.S)
    assert found, f"no table titled {title!r}"
    return found.group(0)


def _legend(html: str) -> list[str]:
    """The texts of the first figure's legend (matplotlib keeps each drawn text as a comment
    beside its glyphs)."""
    legend = re.search(r'<g id="legend_1">(.*?)</g>\s*</g>\s*</g>', html, re.S)
    assert legend, "no legend"
    return [unescape(t) for t in re.findall(r"<!-- (.*?) -->", legend.group(1))]


def test_safeguard_compare_page_is_html_per_language(runs, client):
    page = client.get(_compare_url(runs, "zero-shot", "llamaguard3"))
    assert page.status_code == 200
    html = page.text
    assert "<pre" not in html and "┃" not in html and "│" not in html
    table = _table(html, "B − A")
    langs = re.findall(r"<tr><td[^>]*>prompt</td><td[^>]*>with_prompt</td><td[^>]*>(\w+)</td>",
                       table)
    assert langs == ["all", *LANGS]
    assert 'data-figure="compare_languages"' in html
    legend = _legend(html)
    assert any("zero-shot on mymodel" in t for t in legend), legend
    assert any("llamaguard3 on mymodel" in t for t in legend), legend
    # each run's own per-subset and per-language numbers, side by side
    side = _table(html, "Per subset and language, run by run")
    assert ">CG<" in side and ">General<" in side and ">ITW<" in side


def test_mcq_compare_page_tells_the_runs_apart(runs, client):
    html = client.get(_compare_url(runs, "first", "second")).text
    assert "<pre" not in html
    subjects = re.findall(r"<tr><td[^>]*>(\w+)</td><td[^>]*>\d+</td>",
                          _table(html, "B − A micro accuracy"))
    assert subjects == ["all", "arts", "law"]
    legend = _legend(html)
    assert len(legend) == 2 and legend[0] != legend[1], legend
    said = f"0-shot likelihood · data {runs.name}/exam.jsonl · subjects arts,law"
    assert legend == [f"mymodel · my-exam · {said} · first", f"mymodel · my-exam · {said} · second"]


def test_report_of_two_runs_compares_per_language(runs, tmp_path):
    out = tmp_path / "both.html"
    assert main(["report", str(runs / "zero-shot"), str(runs / "llamaguard3"),
                 "--output", str(out)]) == 0
    html = out.read_text()
    section = re.search(r'<section id="compare".*?</section>', html, re.S).group(0)
    table = _table(section, "B − A")
    assert re.findall(r"<tr><td[^>]*>prompt</td><td[^>]*>with_prompt</td><td[^>]*>(\w+)</td>",
                      table) == ["all", *LANGS]
    assert "zero-shot on mymodel · sea-safeguard" in section
    assert "llamaguard3 on mymodel · sea-safeguard" in section


def test_a_run_is_named_by_its_guard_and_protocol_options(runs):
    """Its spec's name (issue 61: the one namer): the guard on its model, the task, and what
    differs from the task's own protocol, how the guard was read included."""
    from localeval.tasks.run_spec import RunSpec
    from localeval.views.base import distinct_names  # new in issue 51

    run = load_run(runs / "zero-shot")
    name = RunSpec.from_config(run.config.data()).name
    assert name == NAME
    aware = RunRecord(config=RunConfig.model_validate({**run.config.data(),
                                                       "cultural_awareness": True,
                                                       "label_scores": "full"}),
                      results=run.results.model_copy(update={"cultural_awareness": True}),
                      samples=run.samples, folder=run.folder)
    assert distinct_names([aware]) == [f"{NAME} · cultural awareness yes · label scores full"]
    # the same run twice: told apart by its place when the folders coincide
    assert distinct_names([run, run]) == [f"{NAME} · run 1", f"{NAME} · run 2"]


@pytest.mark.slow
def test_compare_page_in_chromium(runs, tmp_path):
    from headless_chromium import open_page, screenshot

    server, sock = make_server(Catalog(runs / "store.sqlite", []), 0)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(200):
            if server.started:
                break
            threading.Event().wait(0.05)
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        with open_page(base + "/", tmp_path / "profile") as watched:
            page = watched.page
            for name, a, b in (("safety", "zero-shot", "llamaguard3"),
                               ("mcq", "first", "second")):
                page.goto(base + _compare_url(runs, a, b), wait_until="load", timeout=300_000)
                assert page.locator("pre").count() == 0
                assert page.locator("main table").count() >= 2
                assert page.locator("main figure svg").count() >= 1
                screenshot(page, f"compare-{name}", full_page=True)
            rows = page.locator("main table").first.locator("tbody tr").count()
            assert rows == 3  # all, arts, law
            assert watched.console_errors == []
    finally:
        server.should_exit = True
        thread.join(10)


def test_picker_entries_are_told_apart_by_folder_not_only_by_id():
    """Issue 69: two runs of one name finished in one minute were two entries that differed
    only by an id."""
    from localeval.web.pages import picker_labels

    run = {"name": "m · tmlu · 5-shot likelihood", "model": "hf:m",
           "finished_at": "2026-01-02T03:04:05"}
    runs = [{**run, "run_id": "a" * 16, "folder": "/x/runs/tmlu/m-11111111"},
            {**run, "run_id": "b" * 16, "folder": "/x/runs/tmlu/m-22222222"},
            {**run, "run_id": "c" * 16, "folder": "/y/runs/tmlu/m-22222222"},
            {**run, "name": "other", "run_id": "d" * 16, "folder": "/x/o"}]
    labels = picker_labels(runs)
    assert labels["a" * 16] == ("m · tmlu · 5-shot likelihood · 2026-01-02 03:04 · "
                                "tmlu/m-11111111")
    assert labels["b" * 16].endswith("tmlu/m-22222222 · bbbbbbbb")  # the same folder's end
    assert labels["d" * 16] == "other · 2026-01-02 03:04"  # a name alone needs no more
    assert len(set(labels.values())) == 4
