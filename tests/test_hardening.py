"""Attacks from the hardening pass (issue 24), kept as tests: a line separator in a sample's
text, values that must be refused before anything loads, and duplicate ids. No model is built."""

from __future__ import annotations

import json

import pytest

import localeval.run
from localeval import evaluate, load_results
from localeval.backends.base import Generate, Response
from localeval.cli import main
from localeval.demo.mcq import SAMPLE_MCQ

SEPARATORS = "\u2028\u2029\u0085"  # what str.splitlines() splits on, besides \n and \r


class Writes:
    """Generates the answer letter wrapped in every Unicode line separator."""

    identity = {"backend": "writes", "model": "writes"}

    def run(self, requests, progress=None):
        return [Response(text=f"A{SEPARATORS}B\u2028") for r in requests
                if isinstance(r, Generate)]


def test_a_line_separator_in_a_sample_keeps_the_run_readable(tmp_path, capsys):
    folder = tmp_path / "run"
    record = evaluate(task="tmlu", model=Writes(), data=str(SAMPLE_MCQ), method="generation",
                      output=folder, quiet=True, store=False)
    assert all(SEPARATORS in s["output"] for s in record.samples)
    raw = (folder / "samples.jsonl").read_text(encoding="utf-8")
    assert "\u2028" in raw  # written as it is (ensure_ascii=False), one sample a line
    assert raw.count("\n") == len(record.samples)
    again = load_results(folder)
    assert again.samples == record.samples
    for argv in (["show", str(folder)], ["export", str(folder), "--format", "csv"],
                 ["report", str(folder)], ["compare", str(folder), str(folder), "--json"]):
        assert main(argv) == 0, capsys.readouterr().err
    assert "unanswered" in json.loads((folder / "results.json").read_text())


@pytest.fixture
def no_model_load(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded")
    monkeypatch.setattr(localeval.run, "load_backend", refuse)


@pytest.fixture
def model_folder(tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    return f"hf:{tmp_path / 'model'}"


@pytest.mark.parametrize("argv, message", [
    (["--task", "tmlu", "--limit", "-1"], "--limit must be at least 1, not -1"),
    (["--task", "tmlu", "--limit", "0"], "--limit must be at least 1, not 0"),
    (["--task", "sea-safeguard", "--limit", "0"], "--limit must be at least 1, not 0"),
    (["--task", "tmlu", "--max-failed", "-0.5"], "--max-failed is a share of the samples"),
    (["--task", "tmlu", "--top-logprobs", "-1"], "--top-logprobs must be at least 1"),
    (["--task", "sea-safeguard", "--bootstrap", "-10"], "--bootstrap must be 0 (no CIs) or"),
    (["--task", "sea-safeguard", "--sensitive", "maybe"], "--sensitive must be one of paper"),
    (["--task", "llm-safety", "--sensitive", "maybe", "--judge-model", "hf:x"],
     "--sensitive must be one of paper"),
])
def test_bad_values_are_one_line_before_anything_loads(argv, message, model_folder, capsys,
                                                       no_model_load):
    assert main(["run", *argv, "--model", model_folder, "--data", str(SAMPLE_MCQ),
                 "--no-store"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_duplicate_question_ids_name_both_rows(tmp_path, capsys, model_folder, no_model_load):
    rows = [{"id": i, "question": f"q{n}", "A": "a", "B": "b", "answer": "A"}
            for n, i in enumerate(["1", "2", "1"], start=1)]
    data = tmp_path / "quiz" / "test.jsonl"
    data.parent.mkdir()
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["run", "--task", "quiz", "--data", str(data.parent), "--shots", "0",
                 "--model", model_folder]) == 2
    err = capsys.readouterr().err
    assert f"{data}, row 3" in err and "'quiz/1' is also row 1's" in err, err


def test_duplicate_safety_items_name_both_rows(tmp_path, capsys, model_folder, no_model_load):
    row = {"subset": "general", "lang": "th", "id": "7", "prompt": "p", "prompt_label": "safe"}
    data = tmp_path / "items.jsonl"
    data.write_text(json.dumps(row) + "\n" + json.dumps({**row, "prompt": "q"}) + "\n")
    assert main(["run", "--task", "sea-safeguard", "--data", str(data), "--model",
                 model_folder]) == 2
    err = capsys.readouterr().err
    assert "row 2" in err and "is also row 1's" in err, err
