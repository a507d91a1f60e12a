"""--permute-options K and --repeats N for multiple choice (issue 38 item 2): accuracy over
cyclic shifts of the options and over sampled draws, through the cache, in results, tables,
export and the report."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest
from offline_runs import AlwaysLetter, stand_in_model
from scipy import stats

from localeval import evaluate
from localeval.backends.base import Generated, NextLogprobs
from localeval.cli import main
from localeval.data.items import MCQItem
from localeval.report.tables import run_tables
from localeval.tasks.mcq_variants import original_letter, shifted

ANSWERS = "AAABCD"  # gold letters of the six questions


def _exam(tmp_path: Path, right_text: bool = False) -> Path:
    """Six questions; with ``right_text`` the gold option reads "right", the others "x1".."""
    rows = []
    for i, gold in enumerate(ANSWERS):
        options = {c: ("right" if c == gold else f"x{j}") if right_text else c.lower()
                   for j, c in enumerate("ABCD")}
        rows.append({"id": str(i), "question": f"Q{i}?", **options, "answer": gold})
    path = tmp_path / "exam.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


class ReadsTheOptions:
    """Scores the letter whose option text is "right" highest, wherever it is."""

    identity = {"backend": "reader", "model": "reader"}

    def run(self, requests, progress=None):
        out = []
        for r in requests:
            letter = re.search(r"\(([A-D])\) right", r.prompt).group(1)
            out.append(NextLogprobs(logprobs={c: 0.0 if c.strip() == letter else -5.0
                                              for c in r.candidates}))
        return out


class Draws:
    """Sampled generation: draws 0 and 1 answer A, draw 2 answers B; counts calls."""

    identity = {"backend": "draws", "model": "draws"}

    def __init__(self):
        self.seen = []

    def run(self, requests, progress=None):
        self.seen += [r.sample for r in requests]
        return [Generated(text=f"答案是 ({'AAB'[r.sample]})") for r in requests]


def test_each_option_sits_in_each_position_once_with_k_equal_to_the_options():
    item = MCQItem("q", "s", "Q?", ("w", "x", "y", "z"), "C")
    orders = [shifted(item, k) for k in range(4)]
    for position in range(4):
        assert sorted(o.options[position] for o in orders) == ["w", "x", "y", "z"]
    for k, o in enumerate(orders):  # the gold letter follows its option, and maps back
        assert o.options["ABCD".index(o.answer)] == "y"
        assert original_letter(o.answer, k, 4) == "C"


def test_a_position_biased_model_is_seen_through_the_orders(tmp_path):
    run = evaluate(task="my-exam", model=AlwaysLetter("A"), data=_exam(tmp_path), shots=0,
                   permute_options=4, output=tmp_path / "run", cache=tmp_path / "c.sqlite",
                   quiet=True, store=False)
    p = run.results.robustness.permutation
    # always "A": order k is right exactly where the gold option was moved to A
    assert p.accuracy == [ANSWERS.count(c) / 6 for c in "ABCD"]
    assert p.mean == pytest.approx(0.25)
    assert p.std == pytest.approx(statistics.stdev(p.accuracy))
    assert p.same_option == 0 and p.n_questions == 6
    # issue 48 item 10: the t interval of the mean, cut to [0, 1] (before: -1.5 to 51.5%)
    high = stats.t.interval(0.95, 3, loc=0.25, scale=p.std / 2)[1]
    assert p.low == 0 and p.high == pytest.approx(high)
    assert run.results.metrics.micro.acc == 0.5  # the headline: the options as given
    assert run.results.timing["requests_run"] == 24
    # through the cache: the same command again asks nothing
    again = evaluate(task="my-exam", model=AlwaysLetter("A"), data=_exam(tmp_path), shots=0,
                     permute_options=4, output=tmp_path / "run", cache=tmp_path / "c.sqlite",
                     quiet=True, store=False)
    assert again.results.history[-1]["requests_run"] == 0
    assert again.results.history[-1]["requests_cached"] == 24


def test_a_model_that_reads_the_options_answers_the_same_every_time(tmp_path):
    run = evaluate(task="my-exam", model=ReadsTheOptions(), data=_exam(tmp_path, True),
                   shots=0, permute_options=4, quiet=True, store=False)
    p = run.results.robustness.permutation
    assert p.accuracy == [1, 1, 1, 1] and p.same_option == 1 and p.std == 0
    first = run.samples[0]
    assert [v["pred"] for v in first["variants"]] == ["A", "A", "A"]  # original letters


def test_repeats_draw_n_samples_with_mean_std_and_interval(tmp_path):
    model = Draws()
    run = evaluate(task="my-exam", model=model, data=_exam(tmp_path), shots=0,
                   method="generation", repeats=3, output=tmp_path / "run",
                   cache=tmp_path / "c.sqlite", quiet=True, store=False)
    assert sorted(set(model.seen)) == [0, 1, 2] and len(model.seen) == 18
    d = run.results.robustness.draws
    per = [ANSWERS.count(c) / 6 for c in "AAB"]
    assert d.accuracy == per
    assert d.mean == pytest.approx(statistics.mean(per))
    assert d.std == pytest.approx(statistics.stdev(per))
    low, high = stats.t.interval(0.95, 2, loc=statistics.mean(per),
                                 scale=statistics.stdev(per) / 3 ** 0.5)
    assert low < 0 and (d.low, d.high) == (0, pytest.approx(high))  # an accuracy: in [0, 1]
    # in the tables (console, export, report) and the store's metrics
    titles = [t.title for t in run_tables(run.results)]
    assert "my-exam · robustness · accuracy %" in titles
    out = tmp_path / "tables"
    assert main(["export", str(tmp_path / "run"), "--format", "csv", "--output", str(out)]) == 0
    (csv,) = [p for p in out.iterdir() if "robustness" in p.name]
    assert "mean over 3 draws" in csv.read_text(encoding="utf-8")
    assert main(["report", str(tmp_path / "run")]) == 0
    assert "mean over 3 draws" in (tmp_path / "run" / "report.html").read_text(encoding="utf-8")


def test_repeats_need_generation_and_orders_a_sane_k(tmp_path, capsys):
    data = str(_exam(tmp_path))
    base = ["run", "--task", "my-exam", "--data", data, "--model", "hf:/nowhere", "--shots",
            "0", "--output", str(tmp_path / "o")]
    assert main([*base, "--repeats", "3"]) == 2
    assert "--repeats draws sampled answers: it needs --method generation" in \
        capsys.readouterr().err
    assert main([*base, "--permute-options", "9"]) == 2
    assert "--permute-options must be 1 to 6" in capsys.readouterr().err


def test_more_orders_than_options_are_refused_in_one_line(tmp_path, capsys, monkeypatch):
    """Issue 48 item 10: before, --permute-options 6 on four-option questions asked the 4 orders
    there are and recorded 6 ("6 cyclic shifts" in the table, two orders of null accuracy)."""
    import localeval.run

    monkeypatch.setattr(localeval.run, "load_backend", lambda spec, **kw: AlwaysLetter("A"))
    argv = ["run", "--task", "my-exam", "--data", str(_exam(tmp_path)), "--model",
            stand_in_model(), "--shots", "0", "--output", str(tmp_path / "o"), "--no-store"]
    assert main([*argv, "--permute-options", "5"]) == 2
    said = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("note")]
    assert len(said) == 1 and said[0].startswith("error: --permute-options 5: the questions "
                                                 "have at most 4 options"), said
    assert main([*argv, "--permute-options", "4", "--quiet"]) == 0
    assert json.loads((tmp_path / "o" / "results.json").read_text())["robustness"]["orders"] == 4


@pytest.mark.slow
def test_orders_draws_and_tokens_on_a_real_hf_model(tmp_path):
    """The random SmolLM2-shaped model on hf: every order and draw is a request the backend
    runs once and the cache answers after; the backend's token counts reach results.json."""
    from tiny_models import make_model

    folder = make_model(tmp_path / "m", layers=2, tied=False)
    kw = dict(task="my-exam", model=f"hf:{folder}", data=_exam(tmp_path), shots=0,
              method="generation", extract="strict", max_tokens=4, permute_options=2,
              repeats=2, output=tmp_path / "run", cache=tmp_path / "c.sqlite", quiet=True,
              store=False)
    first = evaluate(**kw)
    r = first.results.robustness
    assert len(r.permutation.accuracy) == 2 and len(r.draws.accuracy) == 2
    assert first.results.timing["requests_run"] == 6 * 4  # 2 orders x 2 draws per question
    u = first.results.usage["model"]
    assert u.requests_run == 24 and u.prompt_tokens > 0 and 0 < u.completion_tokens <= 24 * 4
    again = evaluate(**kw)
    assert again.results.usage["model"].cache_hits == 24
    assert again.results.usage["model"].sent_prompt_tokens == 0
    assert again.results.robustness == r


def test_a_permuted_run_shows_its_robustness_where_the_headline_is(tmp_path, capsys):
    """Issue 52 item 4: with --permute-options the run printed only the plain accuracy (the
    per-order table only in `show`, folded in the report, no card), and the progress bar
    counted 4 requests a question as "questions"."""
    from localeval.tasks.registry import make_task
    from localeval.views.registry import view_for

    run = evaluate(task="my-exam", model=AlwaysLetter("A"), data=_exam(tmp_path), shots=0,
                   permute_options=4, output=tmp_path / "run", quiet=True, store=False)
    view = view_for(run.results)
    headline = [t.title for t in view.tables(run.results)[:view.headline(run.results)]]
    assert any("robustness" in title for title in headline)
    assert any("mean micro accuracy over 4 option orders" in c.label for c in view.cards(run.results))
    assert make_task("my-exam", data=str(_exam(tmp_path)), permute_options=4).progress_unit \
        == "requests"
    assert make_task("my-exam", data=str(_exam(tmp_path))).progress_unit == "questions"


def test_the_progress_rate_counts_what_this_invocation_did_over_its_time():
    """Issue 52 item 4: the bar's rate read "31701.25 questions/s" (rich's moving window, a
    batch reported at once, answers from the cache counted): it is the units done since the
    start, cached ones left out, over the time elapsed."""
    from rich.progress import Progress

    from localeval.progress import RateColumn

    now = [0.0]
    bar = Progress(get_time=lambda: now[0], disable=True)
    task_id = bar.add_task("questions", total=100, completed=50, cached=50)
    now[0] = 2.0
    bar.advance(task_id, 10)  # a batch of 10 reported at once, after 2 s
    rate = RateColumn("questions").render(bar.tasks[0]).plain
    assert rate == "5.00 questions/s"


def test_progress_where_stderr_is_not_a_terminal_is_a_line_at_intervals(capfd):
    """Issue 53 item 4: the README's contamination example said nothing on a non-terminal
    stderr for 15 minutes (rich draws its bar there only at the end). A line every interval:
    what is done, the rate of this invocation, the time left; and one at the end."""
    import io

    from localeval.progress import progress_bar, progress_lines

    now = [0.0]
    out = io.StringIO()
    with progress_lines("texts", 100, 40, 30.0, out, clock=lambda: now[0]) as advance:
        for _ in range(6):  # 10 texts every 10 s
            now[0] += 10.0
            advance(10)
    assert out.getvalue().splitlines() == [
        "texts: 70/100 done (70%), 1.00 texts/s, about 0:00:30 left",
        "texts: 100/100 done (100%), 1.00 texts/s"]
    capfd.readouterr()
    with progress_bar("texts", 10) as advance:  # pytest's stderr is no terminal: lines
        advance(10)
    (last,) = capfd.readouterr().err.splitlines()
    assert last.startswith("texts: 10/10 done (100%), ") and last.endswith(" texts/s")
