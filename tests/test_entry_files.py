"""Issue 32, items 3, 5 and 6: files from outside are checked where they enter. Duplicate ids
across the files of one split name both rows; data files that made tracebacks are one line
naming the file; a request cache that is not a usable SQLite file is one line. No model is
built (loopback servers with hand-written replies, or a backend object)."""

from __future__ import annotations

import json
import sqlite3

import pytest
from offline_runs import AlwaysLetter, one_line
from scripted_server import ScriptedServer, top_logprobs_reply

from localeval import evaluate
from localeval.cli import main
from localeval.demo.mcq import SAMPLE_MCQ

ROW = {"question": "q", "A": "a", "B": "b", "C": "c", "D": "d", "answer": "A"}


# ------------------------------------------------------------------ item 3: duplicate ids
def test_duplicate_ids_across_the_files_of_a_split_name_both_rows(tmp_path, capsys):
    """Before: test/s.csv (ids 1, 2) and test/s.jsonl (id 1) were accepted, and compare of the
    run against itself reported -33.33 points."""
    test = tmp_path / "data" / "test"
    test.mkdir(parents=True)
    (test / "s.csv").write_text("id,question,A,B,C,D,answer\n1,q1,a,b,c,d,A\n2,q2,a,b,c,d,B\n")
    (test / "s.jsonl").write_text(json.dumps({**ROW, "id": 1}) + "\n")
    with pytest.raises(Exception) as e:
        evaluate(task="mine", model=AlwaysLetter("A"), data=str(tmp_path / "data"), shots=0,
                 quiet=True, store=False)
    assert f"{test / 's.jsonl'}, row 1, field 'id'" in str(e.value)
    assert f"'s/1' is also {test / 's.csv'}, row 2's" in str(e.value), e.value


def test_the_same_id_in_two_splits_is_fine(tmp_path):
    for split in ("dev", "test"):
        (tmp_path / split).mkdir()
        (tmp_path / split / "s.jsonl").write_text(json.dumps({**ROW, "id": 1}) + "\n")
    record = evaluate(task="mine", model=AlwaysLetter("A"), data=str(tmp_path), shots=0,
                      quiet=True, store=False)
    assert len(record.samples) == 1


# ------------------------------------------------------------------ item 5: data tracebacks
@pytest.mark.parametrize("name, text, message", [
    ("surrogate.jsonl", json.dumps({**ROW, "question": "\ud800"}) + "\n", "lone surrogate"),
    ("digits.jsonl", '{"question": "q", "A": "a", "B": "b", "answer": "A", "n": '
     + "9" * 5000 + "}\n", "Exceeds the limit (4300 digits)"),
    ("deep.jsonl", "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply"),
    ("twice.csv", "question,A,A,answer\nq,a,b,A\n", "column 'A' appears twice in the header"),
])
def test_data_that_made_tracebacks_is_one_line_naming_the_file(name, text, message, tmp_path,
                                                               capsys, model_folder,
                                                               no_model_load):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    assert main(["run", "--task", "mine", "--data", str(path), "--shots", "0", "--model",
                 model_folder, "--no-store"]) == 2
    one_line(capsys, message, str(path))


def test_a_damaged_parquet_page_is_one_line_naming_the_file(tmp_path, capsys, model_folder,
                                                            no_model_load):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "q.parquet"
    rows = [{**ROW, "question": f"question {i} " + "x" * 200} for i in range(3000)]
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=1000, compression="none")
    data = bytearray(path.read_bytes())
    middle = len(data) // 2  # inside a data page of the second row group: the footer is fine
    data[middle:middle + 4000] = b"\xff" * 4000
    path.write_bytes(bytes(data))
    assert main(["run", "--task", "mine", "--data", str(path), "--shots", "0", "--model",
                 model_folder, "--no-store"]) == 2
    err = one_line(capsys, str(path), "cannot read as Parquet")
    assert "cache" not in err


def test_a_plain_folder_for_sea_safeguard_isone_line(tmp_path, capsys, model_folder,
                                                     no_model_load):
    """Before: datasets' "BuilderConfig 'general' not found" traceback."""
    (tmp_path / "items").mkdir()
    (tmp_path / "items" / "a.jsonl").write_text(json.dumps(
        {"id": "1", "subset": "general", "lang": "en", "prompt": "hi",
         "prompt_label": "safe"}) + "\n")
    assert main(["run", "--task", "sea-safeguard", "--data", str(tmp_path / "items"),
                 "--model", model_folder, "--no-store"]) == 2
    one_line(capsys, str(tmp_path / "items"), "without a README.md")


# ------------------------------------------------------------------ item 6: the cache file
def _cached_run(url, cache, output):
    return main(["run", "--task", "tmlu", "--data", str(SAMPLE_MCQ), "--model", "openai:m",
                 "--base-url", url, "--method", "likelihood", "--shots", "0", "--output",
                 str(output), "--no-store", "--no-report", "--cache", str(cache)])


@pytest.fixture
def server():
    top = {"A": -1.0, "B": -2.0, "C": -3.0, "D": -4.0}
    with ScriptedServer(lambda path, body: top_logprobs_reply(top)) as s:
        yield s


def _damaged(tmp_path, server, how: str):
    good = tmp_path / "good.sqlite"
    assert _cached_run(server.url, good, tmp_path / "first") == 0
    with sqlite3.connect(good) as db:  # everything in the main file, as after a clean exit
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(good.read_bytes())
    if how == "truncated":
        data = data[: len(data) // 2 + 100]
    else:  # a page of the table overwritten
        data[4096 + 10 : 4096 + 400] = bytes(range(256)) + bytes(range(134))
    path = tmp_path / f"{how}.sqlite"
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("kind", ["text", "folder", "/proc/version", "truncated", "overwritten"])
def test_a_cache_that_is_not_a_usable_sqlite_file_isone_line(kind, tmp_path, server, capsys):
    """Before: sqlite3.DatabaseError / OperationalError tracebacks."""
    if kind == "text":
        cache = tmp_path / "notes.txt"
        cache.write_text("my notes\n")
    elif kind == "folder":
        cache = tmp_path / "folder"
        cache.mkdir()
    elif kind == "/proc/version":
        cache = "/proc/version"
    else:
        cache = _damaged(tmp_path, server, kind)
        capsys.readouterr()
    asked = len(server.posts)
    assert _cached_run(server.url, cache, tmp_path / "run") == 2
    one_line(capsys, f"cache {cache}")
    assert len(server.posts) == asked  # refused before any request


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
