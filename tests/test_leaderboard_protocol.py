"""Issue 51 items 2 and 3: runs on the leaderboard are matched by their data's contents (the
sha256 config.json records in ``data_files``), not by the path the data was reached by; a
folder from before the fingerprint falls back to the path and says so; the reference run is
named and can be picked (``--reference RUN``); a row with no value is never ranked ahead of
one with a value, and carries no rank."""

from __future__ import annotations

import json
import shutil

from offline_runs import AlwaysLetter, as_before_data_files, safeguard_run

from localeval import evaluate
from localeval.cli import main
from localeval.store.results_db import record_run, task_runs
from localeval.store.runs import finished_record
from localeval.views.mcq import MCQView
from localeval.views.registry import protocol_facts


def _board(*args) -> dict:
    import io
    from contextlib import redirect_stdout

    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["leaderboard", *args, "--json"]) == 0
    return json.loads(out.getvalue())


def test_the_same_data_file_by_two_paths_ranks_together(shared, tmp_path):
    """Two people's checkouts: the same bytes at two paths are one protocol."""
    for person in ("alice", "bob"):
        data = tmp_path / person / "checkout" / "shared" / "xstest_prompts.csv"
        data.parent.mkdir(parents=True)
        shutil.copyfile(shared / "data" / "xstest" / "xstest_prompts.csv", data)
        safeguard_run(tmp_path / person / "run", task="safety-prompts", data=data, limit=12,
                      model_name=f"guard-{person}")
    board = _board("--task", "safety-prompts")
    assert board["apart"] == [], board["apart"]
    assert len(board["rows"]) == 2


def _exam(path, answers):
    path.write_text("".join(json.dumps({"id": str(i), "subject": "s", "question": f"Q{i}?",
                                        "A": "a", "B": "b", "C": "c", "D": "d",
                                        "answer": a}) + "\n" for i, a in enumerate(answers)),
                    encoding="utf-8")
    return path


def test_one_custom_task_name_on_two_data_files_is_apart(tmp_path):
    first = _exam(tmp_path / "one.jsonl", "AAAB")
    second = _exam(tmp_path / "two.jsonl", "BBBA")
    for name, data in (("A", first), ("B", second)):
        evaluate(task="my-exam", model=AlwaysLetter(name), data=data, shots=0,
                 output=tmp_path / f"run-{name}", quiet=True)
    board = _board("--task", "my-exam")
    assert len(board["rows"]) == 1 and len(board["apart"]) == 1, board
    (apart,) = board["apart"]
    assert any(d.startswith("data sha256 ") for d in apart["differs"]), apart["differs"]


def test_a_folder_from_before_the_fingerprint_is_matched_by_path_and_says_so(tmp_path):
    data = _exam(tmp_path / "exam.jsonl", "AAAB")
    for name in "AB":
        evaluate(task="my-exam", model=AlwaysLetter(name), data=data, shots=0,
                 output=tmp_path / f"run-{name}", quiet=True)

    from localeval.store.results_db import store_path

    # B as a run from before data_files existed, and before the run summary (issue 53)
    as_before_data_files(store_path(), "always-B")
    board = _board("--task", "my-exam")
    assert board["apart"] == [] and len(board["rows"]) == 2, board  # the same path
    old_row = next(r for r in board["rows"] if r["model"] == "always-B")
    assert any("matched by its path" in n for n in old_row["notes"]), old_row
    # another path: apart, saying which path
    moved = _exam(tmp_path / "moved.jsonl", "AAAB")
    evaluate(task="my-exam", model=AlwaysLetter("C"), data=moved, shots=0,
             output=tmp_path / "run-C", quiet=True)
    board = _board("--task", "my-exam", "--reference", old_row["run_id"])
    (apart,) = board["apart"]
    assert apart["model"] == "always-C"
    assert f"data path {moved} (ranked: path {data})" in apart["differs"], apart
    assert main(["leaderboard", "--task", "my-exam", "--reference", old_row["run_id"]]) == 0


def _recorded(folder, model, n, accuracy):
    folder.mkdir(parents=True)
    results = {"schema": "localeval.mcq/1", "task": "t", "n_samples": n,
               "method": "likelihood", "shots": 0, "metrics": {
                   "micro": {"acc": accuracy, "n": n}, "discipline_average": accuracy,
                   "by_subject": {"s": {"acc": accuracy, "n": n}}}}
    record = finished_record({"task": "t", "model": model, "data": "t.jsonl", "limit": n},
                             results, [], folder=folder)
    return record_run(record, MCQView().store_metrics(record.results),
                      protocol_of=protocol_facts)


def test_the_reference_run_is_named_and_can_be_picked(tmp_path):
    small = _recorded(tmp_path / "small", "m-small", 10, 0.5)
    _recorded(tmp_path / "big", "m-big", 20, 0.4)
    # another protocol: a limit
    runs = task_runs("t")
    assert len(runs) == 2
    board = _board("--task", "t")
    assert board["reference_run"] == next(r["run_id"] for r in runs if r["model"] == "m-big")
    assert "m-big" in board["reference_is"]
    picked = _board("--task", "t", "--reference", small[:8])
    assert picked["reference_run"] == small
    assert "m-small" in picked["reference_is"]
    assert main(["leaderboard", "--task", "t", "--reference", str(tmp_path / "small")]) == 0


def test_a_row_with_no_value_is_last_and_unranked(tmp_path):
    _recorded(tmp_path / "none-1", "m-none-1", 10, None)
    _recorded(tmp_path / "valued", "m-valued", 10, 0.3)
    _recorded(tmp_path / "none-2", "m-none-2", 10, None)
    board = _board("--task", "t")
    rows = board["rows"]
    assert [r["model"] for r in rows][0] == "m-valued"
    assert rows[0]["rank"] == 1
    assert [r["rank"] for r in rows[1:]] == [None, None], rows
    only_none = _board("--task", "t", "--reference", task_runs("t")[0]["run_id"])
    assert all(r["rank"] is None for r in only_none["rows"] if r["values"]["micro"] is None)


def test_runs_without_a_value_neither_rank_first_nor_set_the_reference(tmp_path):
    """On main the two valueless runs (more items, another --limit) set the protocol and were
    ranked #1 and #2, the one run with a number listed apart."""
    _recorded(tmp_path / "valued", "m-valued", 5, 0.9)
    _recorded(tmp_path / "none-1", "m-none-1", 10, None)
    _recorded(tmp_path / "none-2", "m-none-2", 10, None)
    board = _board("--task", "t")
    assert [(r["rank"], r["model"]) for r in board["rows"]][0] == (1, "m-valued"), board
    assert "m-valued" in board["reference_is"]
    assert all(r["rank"] is None for r in board["rows"] + board["apart"]
               if r["values"]["micro"] is None and "rank" in r)
