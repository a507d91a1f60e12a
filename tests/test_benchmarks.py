"""A benchmark is one declaration (tasks/benchmarks.py): TMLU's data with the options it fixes,
a task name of its own that runs offline on TMLU's layout, is listed by `localeval tasks`, and
is rescored like any multiple-choice run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localeval import evaluate
from localeval.backends.base import Backend, Generated
from localeval.cli import main
from localeval.demo.mcq import SAMPLE_MCQ
from localeval.rescore import rescore_run
from localeval.tasks.benchmarks import BENCHMARKS, Benchmark
from localeval.tasks.registry import make_task


class SaysB(Backend):
    """"我選 B" after some reasoning, to every question: the TMLU rules read B (the last answer
    line's first capital); the strict CoT rule needs a final-answer statement (正確答案/答案/
    Answer and a letter), which this is not."""

    identity = {"backend": "says-b", "model": "says-b"}

    def __init__(self) -> None:
        self.calls = 0

    def run(self, requests, progress=None):
        self.calls += len(requests)
        out = [Generated(text="先看選項。\n我選 B") for _ in requests]
        for i, answer in enumerate(out):
            if progress:
                progress(i, answer)
        return out


def _golds() -> list[str]:
    return [json.loads(line)["answer"] for path in sorted(Path(str(SAMPLE_MCQ)).glob("*_test.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_a_benchmark_is_one_declaration_over_a_catalog_dataset():
    declared = BENCHMARKS["tmlu-cot"]
    assert declared.dataset == "tmlu" and dict(declared.options)["cot"] is True
    task = make_task("tmlu-cot", data=str(SAMPLE_MCQ))
    assert (task.dataset, task.config.method, task.config.prompt.cot) == ("tmlu", "generation",
                                                                          True)
    assert task.config.prompt.style == "tmlu" and task.config.extraction == "tmlu"
    # what is given overrides the benchmark's own
    assert make_task("tmlu-cot", data=str(SAMPLE_MCQ), shots=0).config.prompt.shots == 0
    with pytest.raises(ValueError, match="MCQOptions lacks"):
        Benchmark("tmlu", "x", {"no_such_option": 1})
    with pytest.raises(ValueError, match="unknown dataset"):
        Benchmark("nope", "x")


def test_the_tmlu_variant_runs_offline_is_listed_and_rescores(tmp_path, capsys):
    assert main(["tasks", "--json"]) == 0
    listed = {row["task"]: row for row in json.loads(capsys.readouterr().out)}
    assert listed["tmlu-cot"]["source"] == "miulab/tmlu"
    assert main(["tasks", "tmlu-cot", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 37  # TMLU's subjects

    model = SaysB()
    folder = tmp_path / "cot"
    record = evaluate(task="tmlu-cot", model=model, data=str(SAMPLE_MCQ), output=folder,
                      cache=folder / "cache.sqlite", quiet=True, store=False)
    golds = _golds()
    assert model.calls == len(golds)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert (config["task"], config["method"], config["prompt"]["cot"]) == ("tmlu-cot",
                                                                           "generation", True)
    # the TMLU rules read "我選 B": accuracy is the share of questions whose answer is B
    assert record.results.metrics.micro.acc == pytest.approx(golds.count("B") / len(golds))

    rescored = rescore_run(folder, {"extract": "strict"}, output=tmp_path / "strict",
                           store=False, quiet=True)
    assert model.calls == len(golds)  # from the cache alone
    assert rescored.config["task"] == "tmlu-cot"
    assert rescored.results.metrics.micro.acc == 0.0  # no final-answer statement
