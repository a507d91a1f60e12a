"""A new kind of task costs its own files: this test adds one from inside itself (its data, plan,
score, options, sample and results records, and results view), registers them in the tables at
run time, and runs every command that reads results on it: run, show, export, report,
leaderboard and compare. Nothing else in the package knows it. (docs/architecture.md, "A new kind of task", lists what it took.)

The toy: is a text longer than ``min_letters``? The "model" answers through ordinary ScoreNext
requests (its log-probs come from the text's length), so the run goes through the cache, the
lifecycle and the run folder like any other."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from localeval.backends.base import NextLogprobs, ScoreNext
from localeval.cli import main
from localeval.records import RESULTS_TYPES, SAMPLE_TYPES, Results, Sample, results_record
from localeval.records.base import Share
from localeval.records.comparison import Comparison
from localeval.render.table import Number, TableBuilder, columns
from localeval.tasks.base import Task
from localeval.tasks.options import make_options, option
from localeval.tasks.registry import TASKS, TaskEntry
from localeval.views import Ranking, ResultsView
from localeval.views.base import finished_run
from localeval.views.registry import VIEWS

TEXTS = {"a": "hi", "b": "hello there", "c": "ok", "d": "a longer sentence", "e": "yes"}


class LengthModel:
    """Answers " long" when the text has more than 2 letters."""

    identity = {"backend": "toy", "model": "length-model"}

    def run(self, requests, progress=None):
        return [NextLogprobs(logprobs={" long": -1.0 if len(r.prompt) > 2 else -2.0,
                                       " short": -1.5}) for r in requests]


@dataclass(frozen=True)
class ToyOptions:
    """Toy (toy): is a text long?"""

    data: str | None = option(None, "JSONL of id, text")
    min_letters: int = option(3, "gold: a text with more letters than this is long", type=int)


class ToySample(Sample):
    """A line of the toy's samples.jsonl."""

    gold: bool
    pred: bool
    correct: bool


class ToyResults(Results):
    accuracy: Share


class ToyComparison(Comparison):
    diff: float


class ToyTask(Task):
    results_schema = "test.toy/1"
    Options = ToyOptions
    default_model = LengthModel()  # a model of its own: --model may be left out

    def __init__(self, name: str = "toy", **options):
        self.name, self.options = name, make_options(ToyOptions, name, options)

    def load(self):
        rows = [json.loads(line) for line in Path(self.options.data).read_text().splitlines()]
        return [(r["id"], r["text"], len(r["text"]) > self.options.min_letters) for r in rows]

    def plan(self, data, backend):
        return [(item, ScoreNext(item[1], (" long", " short"))) for item in data]

    def respond(self, planned, execute):
        return execute([request for _, request in planned])

    def score(self, planned, answer) -> ToySample:
        (item_id, _, gold), _ = planned
        pred = max(answer.logprobs, key=answer.logprobs.get) == " long"
        return ToySample(id=item_id, gold=gold, pred=pred, correct=pred == gold)

    def summarise(self, samples, data, identity) -> ToyResults:
        right = sum(s.correct for s in samples)
        return results_record({"schema": self.results_schema, "task": self.name,
                               "n_samples": len(samples), "n_failed": 0,
                               "accuracy": right / len(samples)}, ToyResults)

    def describe(self, data):
        return {"task": self.name, "data": self.options.data,
                "min_letters": self.options.min_letters}


class ToyView(ResultsView):
    kind = "toy"
    schema = ToyTask.results_schema
    Results = ToyResults

    def tables(self, results):
        table = TableBuilder("Toy accuracy", columns("n", "accuracy %", text=0))
        table.add(results.n_samples, Number(results.accuracy, scale=100))
        return [table.build()]

    def cards(self, results):
        return [(f"{100 * results.accuracy:.1f}%", "toy accuracy", False)]

    def store_metrics(self, results):
        return [("accuracy", results.accuracy, results.n_samples)]

    def ranking(self, names):
        return Ranking(["accuracy"], "accuracy")

    def compare(self, run_a, run_b):
        a, b = finished_run(run_a), finished_run(run_b)
        assert all(isinstance(s, ToySample) for s in (*a.samples, *b.samples))  # read back typed
        return ToyComparison(diff=b.results.accuracy - a.results.accuracy)

    def print_comparison(self, comparison, console):
        console.print(f"toy B - A: {100 * comparison.diff:+.1f} points")


@pytest.fixture
def toy(monkeypatch, tmp_path):
    monkeypatch.setitem(TASKS, "toy", TaskEntry("toy", ToyTask, "(--data)", "", "toy task"))
    monkeypatch.setitem(VIEWS, ToyView.schema, ToyView)
    monkeypatch.setitem(RESULTS_TYPES, ToyTask.results_schema, ToyResults)
    monkeypatch.setitem(SAMPLE_TYPES, ToyTask.results_schema, ToySample)
    data = tmp_path / "toy.jsonl"
    data.write_text("".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in TEXTS.items()))
    return str(data)


def test_a_new_task_kind_runs_through_every_command(toy, tmp_path, capsys):
    out_a, out_b = str(tmp_path / "a"), str(tmp_path / "b")
    # Its own option becomes a flag. By hand: at min_letters 3 only "yes" (3 letters, said
    # long) is wrong: 4 of 5; at 1 "hi" and "ok" (gold long, said short) are: 3 of 5.
    assert main(["run", "--task", "toy", "--data", toy, "--output", out_a, "--quiet"]) == 0
    assert "80.0" in capsys.readouterr().out
    assert main(["run", "--task", "toy", "--data", toy, "--min-letters", "1", "--output",
                 out_b, "--quiet", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.split("\nwrote")[0])["accuracy"] == 0.6
    config = json.loads(Path(out_b, "config.json").read_text())
    assert config["min_letters"] == 1 and config["backend"]["model"] == "length-model"

    assert main(["show", out_a]) == 0 and "Toy accuracy" in capsys.readouterr().out
    assert main(["export", out_a, "--format", "csv"]) == 0
    assert "n,accuracy %\n5,80.0" in capsys.readouterr().out
    assert main(["report", out_a]) == 0 and "wrote" in capsys.readouterr().err
    report = Path(out_a, "report.html").read_text(encoding="utf-8")
    assert "80.0%" in report and "toy accuracy" in report and "Toy accuracy" in report
    assert main(["leaderboard", "--task", "toy", "--json", "--reference", out_a]) == 0
    board = json.loads(capsys.readouterr().out)
    # issue 61: its option is a protocol fact (an option's role is protocol unless it says
    # otherwise), so the run at --min-letters 1 is listed apart, with what differs
    assert [r["values"]["accuracy"] for r in board["rows"]] == [0.8]
    assert [(r["values"]["accuracy"], r["differs"]) for r in board["apart"]] == \
        [(0.6, ["min letters 1 (ranked: 3)"])]
    data = f"data {Path(toy).parent.name}/toy.jsonl"
    assert [r["name"] for r in board["rows"] + board["apart"]] == \
        [f"length-model · toy · {data}", f"length-model · toy · {data} · min letters 1"]
    assert main(["compare", out_a, out_b]) == 0
    assert "toy B - A: -20.0 points" in capsys.readouterr().out


def test_its_flags_belong_to_it_alone(toy, tmp_path, capsys):
    assert main(["run", "--task", "tmlu", "--min-letters", "2", "--model", "hf:x"]) == 2
    assert "--min-letters is not an option of task 'tmlu'" in capsys.readouterr().err
    assert main(["run", "--task", "toy", "--data", toy, "--shots", "2"]) == 2
    assert "--shots is not an option of task 'toy' (Toy (toy): is a text long?)" in \
        capsys.readouterr().err
