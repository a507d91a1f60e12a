"""Input files are read with a bound on memory: a huge line or cell is one clear line naming
file, row and the limit; a huge file is read row by row."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from localeval.cli import main
from localeval.data import rows
from localeval.errors import DataError

LIMIT = 2**20  # 1 MiB for these tests


@pytest.fixture(autouse=True)
def small_limit(monkeypatch):
    monkeypatch.setattr(rows, "MAX_FIELD_BYTES", LIMIT)


def _peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def test_a_huge_jsonl_line_is_one_line_without_reading_it(tmp_path):
    path = tmp_path / "huge.jsonl"
    with path.open("w") as f:
        f.write(json.dumps({"prompt": "fine", "label": "safe"}) + "\n")
        f.write(json.dumps({"prompt": "x" * (30 * LIMIT), "label": "safe"}) + "\n")  # 30 MiB

    def read():
        with pytest.raises(DataError) as e:
            list(rows.read_rows(path))
        assert e.value.row == 2 and "longer than 1,048,576 bytes" in str(e.value)
        assert str(path) in str(e.value) and "LOCALEVAL_MAX_FIELD_BYTES" in str(e.value)

    assert _peak(read) < 4 * LIMIT  # never the whole 30 MiB line


def test_a_huge_csv_cell_names_its_row(tmp_path):
    path = tmp_path / "huge.csv"
    path.write_text("prompt,label\nfine,safe\nalso fine,safe\n\"" + "y" * (2 * LIMIT) +
                    "\",safe\n")
    with pytest.raises(DataError) as e:
        list(rows.read_rows(path))
    assert e.value.row == 4 and "longer than" in str(e.value)


def test_bad_utf8_deep_in_a_csv_names_its_line(tmp_path):
    path = tmp_path / "bad.csv"
    lines = [b"prompt,label"] + [f"prompt {i},safe".encode() for i in range(5000)]
    lines[4000] = b"caf\xe9,safe"  # Latin-1, line 4001
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(DataError) as e:
        list(rows.read_rows(path))
    assert e.value.row == 4001 and "UTF-8" in str(e.value)


def test_a_big_file_is_read_row_by_row(tmp_path):
    path = tmp_path / "big.jsonl"
    line = json.dumps({"prompt": "z" * 1000, "label": "safe"}) + "\n"
    path.write_text(line * 20000)  # 20 MB

    def first_rows():
        reader = rows.read_rows(path)
        for _ in range(10):
            next(reader)
        reader.close()

    assert _peak(first_rows) < LIMIT


def test_the_cli_gives_one_line_for_a_huge_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("LAKERA_GUARD_API_KEY", "unused")
    path = tmp_path / "prompts.jsonl"
    path.write_text(json.dumps({"id": "a", "prompt": "p" * (3 * LIMIT), "label": "safe"}) + "\n")
    assert main(["run", "--task", "safety-prompts", "--data", str(path), "--guard",
                 "lakera-guard", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "prompts.jsonl" in err and "longer than" in err
