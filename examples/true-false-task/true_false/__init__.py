"""A task: does a model tell true statements from false ones? It says a statement is true when
"True" is likelier than "False" as the next word after it."""

from dataclasses import asdict, dataclass
from pathlib import Path

from localeval.backends.base import Failed, ScoreNext
from localeval.data.rows import read_rows
from localeval.errors import DataError
from localeval.records import Results, Sample, results_record
from localeval.render.table import Number, TableBuilder, columns
from localeval.tasks.base import Task
from localeval.tasks.options import TaskOptions, make_options, option
from localeval.views import Ranking, ResultsView

STATEMENTS = Path(__file__).parent / "statements.jsonl"  # the package's own data
SCHEMA = "true-false/1"  # results.json's "schema": which view shows these results


@dataclass(frozen=True)
class TrueFalseOptions(TaskOptions):
    """True or false (true-false): does the model tell true statements from false ones?"""

    data: str | None = option(None, "JSONL of id, statement, answer (true or false); "
                              "default: the package's own statements")
    margin: float = option(0.0, "say true when log P(True) - log P(False) > margin",
                           rescorable=True)
    log_prompts: bool = option(False, "write each prompt into samples.jsonl", role="output")


@dataclass(frozen=True)
class Statement:
    id: str
    text: str
    answer: bool


@dataclass(frozen=True)
class Planned:  # one per sample; the default respond() sends each .request
    item: Statement
    request: ScoreNext


class StatementSample(Sample):  # a line of samples.jsonl (Sample has id and error)
    answer: bool
    true_minus_false: float | None = None  # log P(True) - log P(False)
    said_true: bool | None = None  # None: the request failed
    correct: bool | None = None
    prompt: str | None = None


class TrueFalseView(ResultsView):
    kind = "true-false"
    schema = SCHEMA
    Options = TrueFalseOptions

    def tables(self, results):
        table = TableBuilder("True or false", columns("n", "failed", "accuracy %", text=0))
        table.add(results.n_samples, results.n_failed, Number(results["accuracy"], scale=100))
        return [table.build()]

    def store_metrics(self, results):  # what the leaderboard ranks by
        return [("accuracy", results["accuracy"], results.n_samples - results.n_failed)]

    def ranking(self, names):
        return Ranking(["accuracy"], "accuracy")


class TrueFalseTask(Task):
    results_schema = SCHEMA
    Options = TrueFalseOptions
    view = TrueFalseView

    def __init__(self, name="true-false", **options):
        self.name = name
        self.options = make_options(TrueFalseOptions, name, options)  # -T KEY=VALUE, checked

    def load(self):  # every data error here, before the model loads: one line, file and row
        path = Path(self.options.data) if self.options.data else STATEMENTS
        items = []
        for row, line in read_rows(path):
            for field, kind, said in (("id", str, "a string"), ("statement", str, "a string"),
                                      ("answer", bool, "true or false")):
                if not isinstance(line.get(field), kind):
                    raise DataError(path, row, field, f"must be {said}")
            items.append(Statement(line["id"], line["statement"], line["answer"]))
        if not items:
            raise DataError(path, None, None, "holds no statements")
        return items

    def plan(self, data, backend):  # the answer words start a line: no space before them,
        # which some tokenizers make a token of its own (the two first tokens must differ)
        return [Planned(s, ScoreNext(f"True or false?\n{s.text}\n", ("True", "False")))
                for s in data]

    def score(self, planned, answer):
        s = planned.item
        logged = {"prompt": planned.request.prompt} if self.options.log_prompts else {}
        if isinstance(answer, Failed):  # counted as failed, never as right or wrong
            return StatementSample(id=s.id, answer=s.answer, error=answer.error, **logged)
        true, false = answer.logprobs["True"], answer.logprobs["False"]
        if true is None or false is None:  # a server's top log-probs may hold neither
            return StatementSample(id=s.id, answer=s.answer, **logged,
                                   error="True or False not among the top log-probs")
        said_true = true - false > self.options.margin
        return StatementSample(id=s.id, answer=s.answer, true_minus_false=true - false,
                               said_true=said_true, correct=said_true == s.answer, **logged)

    def summarise(self, samples, data, identity):
        failed = [s.id for s in samples if s.error is not None]
        scored = [s for s in samples if s.error is None]
        accuracy = sum(s.correct for s in scored) / len(scored) if scored else None
        return results_record({"schema": SCHEMA, "task": self.name, "n_samples": len(samples),
                               "n_failed": len(failed), "failed": failed,
                               "accuracy": accuracy}, Results)  # checked as results.json

    def describe(self, data):  # config.json: each option under its own name
        return {"task": self.name, **asdict(self.options)}
