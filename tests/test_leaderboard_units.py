"""The leaderboard prints a run's own numbers: a real (small, offline) safeguard run's Table 2
cells appear as results.json and ``leaderboard --json`` hold them, in points, under the paper's
Table 2 column names; a run without Table 2 shows its pooled PR-AUC in points; and every model
is named by one rule."""

from __future__ import annotations

import csv
import io
import json

import pytest
from offline_runs import safeguard_run

from localeval.cli import main

PAPER_COLUMNS = ["Prompt General EN", "Prompt General SEA", "Prompt ITW EN", "Prompt ITW SEA",
                 "Prompt CG EN", "Prompt CG SEA", "Prompt Avg", "Response General EN",
                 "Response General SEA", "Response CG EN", "Response CG SEA", "Response Avg"]


def _printed_rows(text: str) -> list[list[str]]:
    """The cells of a plain (non-terminal) rich table's lines."""
    return [[c.strip() for c in line.strip("│┃ ").split("│" if "│" in line else "┃")]
            for line in text.splitlines() if line.startswith(("│", "┃"))]


def test_table2_leaderboard_prints_the_runs_points(tmp_path, capsys):
    record = safeguard_run(tmp_path / "run")
    table2 = record.results["table2"]
    (row,) = table2["rows"]
    assert main(["leaderboard", "--any-protocol", "--task", "sea-safeguard", "--json"]) == 0
    board = json.loads(capsys.readouterr().out)
    values = board["rows"][0]["values"]
    assert [board["titles"][c] for c in board["columns"]] == PAPER_COLUMNS
    assert main(["leaderboard", "--any-protocol", "--task", "sea-safeguard"]) == 0
    printed = capsys.readouterr().out
    header, first = _printed_rows(printed)[:2]
    assert header[3:15] == PAPER_COLUMNS
    assert "percent" not in printed.splitlines()  # the caption says what the numbers are
    assert "PR-AUC points" in printed
    for title, cell in zip(header[3:15], first[3:15], strict=True):
        column = next(c for c in board["columns"] if board["titles"][c] == title)
        in_results = row["values"][column.removeprefix("table2/")]
        assert 0 <= float(cell) <= 100
        assert cell == f"{in_results:.1f}" == f"{values[column] * board['scale']:.1f}"
    # CSV, as pasted: the same numbers under the same names.
    assert main(["leaderboard", "--any-protocol", "--task", "sea-safeguard", "--format", "csv"]) == 0
    table = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert table[0]["Prompt Avg"] == f"{row['values']['prompt/avg']:.1f}"


def test_without_table2_the_pooled_pr_auc_in_points(shared, tmp_path, capsys):
    record = safeguard_run(tmp_path / "xs", task="safety-prompts", limit=12,
                           data=shared / "data" / "xstest" / "xstest_prompts.csv")
    assert record.results["table2"] is None
    (overall,) = [r for r in record.results["overall"] if r["subset"] == "all"]
    assert main(["leaderboard", "--any-protocol", "--task", "safety-prompts", "--format", "csv"]) == 0
    (line,) = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert line["Prompt"] == f"{100 * overall['auprc']:.1f}"
    assert main(["leaderboard", "--any-protocol", "--task", "safety-prompts", "--json"]) == 0
    board = json.loads(capsys.readouterr().out)
    assert board["rows"][0]["values"]["auprc/prompt/with_prompt/all"] == pytest.approx(
        overall["auprc"])


def test_a_100_column_terminal_cuts_no_number_and_tells_models_apart(tmp_path, capsys):
    """Two runs of models whose paths end alike, in a 100-column terminal: every number is
    whole, and the models are shown by the parts of their paths that differ."""
    from rich.console import Console

    from localeval.render.formats import print_table
    from localeval.report.leaderboard import leaderboard, leaderboard_tables
    from localeval.store.results_db import task_runs

    for name in ("a", "b"):
        safeguard_run(tmp_path / name, model_name=f"/path/to/{name}/my-guard-model")
    board = leaderboard("sea-safeguard", task_runs("sea-safeguard"), any_protocol=True)
    console = Console(width=100, record=True, color_system=None)
    print_table(console, leaderboard_tables("sea-safeguard", board)[0])
    printed = console.export_text()
    assert "…" not in printed, printed
    assert "(1/3)" in printed and "(3/3)" in printed  # stacked
    assert "a/my-guard-model" in printed and "b/my-guard-model" in printed
    numbers = [f"{board['scale'] * v:.1f}" for r in board["rows"] for v in r["values"].values()
               if v is not None]
    for number in numbers:
        assert number in printed
    assert max(len(line) for line in printed.splitlines()) <= 100


@pytest.mark.parametrize("stored, said", [
    (-5, "is -5.0, not a number from 0 to 1"),
    (1.5, "is 1.5, not a number from 0 to 1"),
    (1e308 * 10, "is inf, not a number from 0 to 1"),
    ("abc", "is 'abc', not a number from 0 to 1"),
])
def test_a_hand_edited_store_value_is_one_line_not_a_rank(tmp_path, capsys, stored, said):
    """Issue 48 item 4: the store's -5, 1.5 and inf were ranked (inf first); 'abc' was a
    traceback in leaderboard (and HTTP 500 in the viewer)."""
    import sqlite3

    from offline_runs import mcq_run

    from localeval.store.results_db import store_path

    mcq_run(tmp_path / "a")
    mcq_run(tmp_path / "b")
    capsys.readouterr()
    with sqlite3.connect(store_path()) as db:
        (run_id,) = db.execute("SELECT run_id FROM runs ORDER BY finished_at LIMIT 1").fetchone()
        db.execute("UPDATE metrics SET value = ? WHERE run_id = ? AND name = 'micro'",
                   (stored, run_id))
    assert main(["leaderboard", "--task", "my-exam"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"run {run_id}" in err and f"micro {said}" in err, err


def test_the_leaderboard_names_every_model_by_one_rule():
    """Issue 52 item 10: the leaderboard wrote one model as a trimmed path (`some/dir/mymodel`,
    its `hf:/` dropped) beside another whole (`hf:/some/dir/m6`): the fewest trailing parts that
    tell them apart, taken of each name's path alone, and the kind named only where the names
    have more than one."""
    from localeval.render.cells import distinct_names

    shown = distinct_names(["hf:/a/some/dir/mymodel", "hf:/b/some/dir/mymodel",
                            "hf:/some/dir/m6"])
    assert shown == {"hf:/a/some/dir/mymodel": "a/some/dir/mymodel",
                     "hf:/b/some/dir/mymodel": "b/some/dir/mymodel",
                     "hf:/some/dir/m6": "some/dir/m6"}
    assert distinct_names(["hf:/x/m", "hf:/y/m6"]) == {"hf:/x/m": "m", "hf:/y/m6": "m6"}
    assert distinct_names(["hf:/x/m", "vllm:/x/m", "openai:m6"]) == {
        "hf:/x/m": "hf:m", "vllm:/x/m": "vllm:m", "openai:m6": "openai:m6"}
    assert distinct_names(["hf:Qwen/Qwen2.5-7B", "hf:/models/Qwen2.5-7B"]) == {
        "hf:Qwen/Qwen2.5-7B": "Qwen/Qwen2.5-7B", "hf:/models/Qwen2.5-7B": "models/Qwen2.5-7B"}
