"""`export RUN --format parquet --output DIR`: samples and results in the Hugging Face datasets
layout, loaded back with `datasets` as a user would (issue 38 item 5)."""

from __future__ import annotations

import json

import pytest
from offline_runs import mcq_run, safeguard_run

from localeval.cli import main


def _samples(folder):
    return [json.loads(line) for line in (folder / "samples.jsonl").open(encoding="utf-8")]


def test_a_multiple_choice_run_loads_back_with_datasets(tmp_path, capsys):
    datasets = pytest.importorskip("datasets")
    run = mcq_run(tmp_path / "run")
    out = tmp_path / "hub"
    assert main(["export", str(run.folder), "--format", "parquet", "--output", str(out)]) == 0
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "README.md", "results/train-00000-of-00001.parquet",
        "run/train-00000-of-00001.parquet", "samples/train-00000-of-00001.parquet"]
    # the folder as a dataset repository: the card's configs pick the files
    samples = datasets.load_dataset(str(out), "samples", split="train")
    expected = _samples(run.folder)
    assert samples.num_rows == len(expected)
    assert samples["id"] == [s["id"] for s in expected]
    assert samples["correct"] == [s["correct"] for s in expected]  # typed: booleans
    assert [json.loads(v) for v in samples["logprobs"]] == [s["logprobs"] for s in expected]
    default = datasets.load_dataset(str(out), split="train")  # the default config: samples
    assert default.num_rows == len(expected)
    results = datasets.load_dataset(str(out), "results", split="train")
    metrics = dict(zip(results["metric"], results["value"], strict=True))
    stored = json.loads((run.folder / "results.json").read_text())
    assert metrics["micro"] == pytest.approx(stored["metrics"]["micro"]["acc"])
    assert "average" not in metrics and "accuracy" not in metrics  # a custom task: micro
    (row,) = datasets.load_dataset("parquet", data_files=str(out / "run" / "*.parquet"),
                                   split="train")
    assert json.loads(row["results_json"]) == stored
    card = (out / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\nconfigs:\n- config_name: samples\n")
    assert "`logprobs`" in card  # the JSON-text columns are named


def test_a_safeguard_run_keeps_its_text_and_numbers(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    run = safeguard_run(tmp_path / "guard", store=False)
    out = tmp_path / "hub"
    assert main(["export", str(run.folder), "--format", "parquet", "--output", str(out)]) == 0
    table = pq.read_table(out / "samples" / "train-00000-of-00001.parquet")
    expected = _samples(run.folder)
    assert table.column("score").to_pylist() == [s["score"] for s in expected]
    assert table.column("prompt").to_pylist() == [s["prompt"] for s in expected]
    assert str(table.schema.field("score").type) == "double"


def test_parquet_needs_an_output_folder(tmp_path, capsys):
    run = mcq_run(tmp_path / "run")
    assert main(["export", str(run.folder), "--format", "parquet"]) == 2
    assert "give --output DIR" in capsys.readouterr().err
    (tmp_path / "file").write_text("x")
    assert main(["export", str(run.folder), "--format", "parquet", "--output",
                 str(tmp_path / "file")]) == 2
    assert "is a file" in capsys.readouterr().err


def test_numbers_no_arrow_type_holds_exactly_are_kept_as_json_text():
    """Issue 48 item 8: a year of 10**30 (beyond int64) and a level of 2**53 + 1 among floats
    (a float64 rounds it) were pyarrow tracebacks; each column is now JSON text, value for
    value, and columns a type holds exactly keep it."""
    from localeval.records.samples import MCQSample
    from localeval.report.parquet import samples_table

    table, as_json = samples_table([  # n and share: fields a plugin's sample adds
        MCQSample(id="a", gold="A", year=10**30, level=2**53 + 1, n=3, share=3),
        MCQSample(id="b", gold="B", year=1, level=0.5, n=2**62, share=0.5)])
    assert as_json == ["level", "year"]  # columns in samples.jsonl's order: keys sorted
    assert table.column("year").to_pylist() == [str(10**30), "1"]
    assert table.column("level").to_pylist() == [str(2**53 + 1), "0.5"]
    assert table.column("n").to_pylist() == [3, 2**62]  # int64 holds them
    assert table.column("share").to_pylist() == [3.0, 0.5]
