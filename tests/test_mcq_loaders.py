"""Multiple-choice data loaders (data/mcq_loaders.py): local files and folders in each format,
the Hub's layouts, and data problems said in one line."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from offline_runs import run_line

from localeval import evaluate
from localeval.cli import main
from localeval.data.mcq_loaders import load_hub, load_local
from localeval.errors import DataError, LocalevalError


def test_cmmlu_layout(shared):
    data = load_local(shared / "data" / "cmmlu", ["agronomy", "virology"])
    assert sorted(data) == ["agronomy", "virology"]
    agro = data["agronomy"]
    assert len(agro["dev"]) == 5 and len(agro["test"]) == 169
    first = agro["dev"][0]
    assert first.id == "agronomy/0" and first.answer == "C" and first.options[2] == "大腿"
    assert first.question == "肉牛屠宰后，胴体的哪个部位肉质较好"


def test_tmmluplus_sample_single_file(shared):
    data = load_local(shared / "data" / "tmmluplus-sample" / "test.jsonl")
    items = data["test"]["test"]
    assert len(items) == 20 and items[0].answer == "A" and len(items[0].options) == 4


def test_dev_test_jsonl_folder_and_five_options(tmp_path):
    folder = tmp_path / "physics"
    folder.mkdir()
    row = {"question": "q?", "A": "1", "B": "2", "C": "3", "D": "4", "E": "5", "F": None,
           "answer": "E", "explanation": "because", "year": 2021}
    (folder / "dev.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    (folder / "test.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    data = load_local(folder)
    item = data["physics"]["test"][0]
    assert item.letters == "ABCDE" and item.answer == "E" and item.metadata == {"year": 2021}
    assert item.explanation == "because"


def write(path, text, encoding="utf-8"):
    path.write_bytes(text.encode(encoding))
    return path


@pytest.mark.parametrize("content, row, field, words", [
    ("question,A,B,C,D\nq,a,b,c,d\n", 2, "answer", "missing column"),
    ("question,A,B,C,D,answer\nq,a,b,c,d,E\n", 2, "answer", "not one of the options"),
    ("question,A,B,C,D,answer\nq,a,b,c,d,A\n ,a,b,c,d,B\n", 3, "question", "empty"),
    ("question,A,B,C,D,answer\nq,a,,c,d,A\n", 2, "B", "empty but option C"),
    ("question,A,B,C,D,answer\nq,a,b,c,d,A,extra\n", 2, None, "cells"),
])
def test_malformed_csv_names_file_row_field(tmp_path, content, row, field, words):
    path = write(tmp_path / "bad.csv", content)
    with pytest.raises(DataError) as e:
        load_local(path)
    assert e.value.row == row and e.value.field == field and words in str(e.value)
    assert str(path) in str(e.value)


def test_wrong_encoding(tmp_path):
    path = write(tmp_path / "big5.csv", "question,A,B,answer\nok,a,b,A\n測試,甲,乙,A\n", "big5")
    with pytest.raises(DataError) as e:
        load_local(path)
    assert e.value.row == 3 and "UTF-8" in str(e.value)


def test_bad_jsonl_line(tmp_path):
    path = write(tmp_path / "x.jsonl", '{"question": "q", "A": "a", "B": "b", "answer": "A"}\n{oops\n')
    with pytest.raises(DataError) as e:
        load_local(path)
    assert e.value.row == 2 and "JSON" in str(e.value)


@pytest.mark.parametrize("row, field, words", [
    ('"answer": "A", "answer": "B"', "answer", "field 'answer' appears twice in the row"),
    ('"answer": "A", "Answer": "B"', "Answer", "field 'Answer' and field 'answer' are one field"),
    ('"answer": "A", "meta": {"year": 1, "year": 2}', "year", "field 'year' appears twice"),
])
def test_a_field_named_twice_in_a_jsonl_row_is_refused(tmp_path, row, field, words):
    """Issue 48 item 1: Python's json keeps the last of two equal names, so the row silently
    had answer B (the CSV form, a column named twice, was already refused)."""
    path = write(tmp_path / "x.jsonl", '{"question": "q", "A": "a", "B": "b", "answer": "A"}\n'
                 '{"question": "q", "A": "a", "B": "b", ' + row + '}\n')
    with pytest.raises(DataError) as e:
        load_local(path)
    assert (e.value.row, e.value.field) == (2, field) and words in str(e.value)


def test_split_folders_and_files_beside_them_are_refused_not_half_read(tmp_path):
    """Issue 48 item 1: dev/ and test/ with a's questions, and b_dev.csv and b_test.csv beside
    them: subject b was dropped without a word (100% over 2 questions where b makes 40% over
    5)."""
    row = "question,A,B,answer\nq,a,b,A\n"
    for split in ("dev", "test"):
        (tmp_path / split).mkdir()
        write(tmp_path / split / "a.csv", row)
        write(tmp_path / f"b_{split}.csv", row)
    with pytest.raises(LocalevalError, match=r"holds split folders \(dev/, test/\) and question "
                       r"files beside them \(b_dev.csv, b_test.csv\); use one layout"):
        load_local(tmp_path)


def test_unknown_subject_and_missing_path(tmp_path, shared):
    with pytest.raises(LocalevalError, match="not found"):
        load_local(shared / "data" / "cmmlu", ["no_such_subject"])
    with pytest.raises(LocalevalError, match="does not exist"):
        load_local(tmp_path / "nowhere")


def test_hub_loader_on_local_repo_layout(tmp_path):
    """The Hub path (datasets.load_dataset with a config per subject) on a folder laid out like
    miulab/tmlu: a README declaring configs and their data files."""
    repo = tmp_path / "tmlu"
    for subject in ("AST_chemistry", "driving_rule"):
        (repo / subject).mkdir(parents=True)
        for split, n in (("dev", 5), ("test", 3)):
            rows = [{"id": f"{subject}-{split}-{i}", "question": f"問題 {i}", "A": "甲", "B": "乙",
                     "C": "丙", "D": "丁", "E": "戊" if subject == "AST_chemistry" else None,
                     "answer": "B", "explanation": "說明"} for i in range(n)]
            pq.write_table(pa.Table.from_pylist(rows), repo / subject / f"{split}.parquet")
    configs = "".join(
        f"- config_name: {s}\n  data_files:\n  - split: dev\n    path: {s}/dev.parquet\n"
        f"  - split: test\n    path: {s}/test.parquet\n" for s in ("AST_chemistry", "driving_rule"))
    (repo / "README.md").write_text(f"---\nconfigs:\n{configs}---\n", encoding="utf-8")
    data = load_hub(str(repo), ["AST_chemistry", "driving_rule"], {"dev": "dev", "test": "test"})
    chem = data["AST_chemistry"]["test"][0]
    assert chem.letters == "ABCDE" and chem.id == "AST_chemistry/AST_chemistry-test-0"
    assert data["driving_rule"]["dev"][4].letters == "ABCD"
    with pytest.raises(LocalevalError, match="cannot load"):
        load_hub(str(repo), ["nope"], {"test": "test"})


@pytest.mark.parametrize("text, message", [
    ("question,A,B,C,answer\nq1,a,b,c,D\n",  # was: answer 'D' is not one of the options A, B, C
     "row 2, field 'answer': answer 'D' is not one of the options A, B, C: the file has no "
     "column D"),
    ("question;A;B;C;D;answer\nq1;a;b;c;d;A\n",  # was: missing column 'question'
     "row 1: the header is one column, 'question;A;B;C;D;answer': the file is separated by "
     "semicolons; save it as comma-separated CSV"),
])
def test_a_csv_that_is_not_what_it_seems(text, message, tmp_path, model_folder, no_model_load,
                                         capsys):
    (tmp_path / "exam.csv").write_text(text)
    line = run_line(["run", "--task", "my-exam", "--data", str(tmp_path / "exam.csv"),
                     "--shots", "0", "--model", model_folder], capsys)
    assert line.endswith(message), line


def test_a_subject_outside_the_tasks_list_is_said_and_recorded(shared, tmp_path, capsys):
    """The TMMLU+ sample (test.jsonl in a folder: subject 'tmmluplus-sample') showed only
    `Average -`, with nothing saying why."""
    from offline_runs import AlwaysLetter


    record = evaluate(task="tmmluplus", model=AlwaysLetter("A"), shots=0, quiet=True,
                      data=shared / "data" / "tmmluplus-sample", output=tmp_path / "r")
    assert record.results.metrics.discipline_average is None
    (warning,) = record.results.warnings
    assert warning.startswith("1 subject(s) not among tmmluplus's: tmmluplus-sample; in no "
                              "discipline, so no column and no Average counts them")
    assert f"warning: {warning}" in capsys.readouterr().err
    again = evaluate(task="cmmlu", model=AlwaysLetter("A"), shots=0, quiet=True, limit=2,
                     data=shared / "data" / "cmmlu", subjects="arts", output=tmp_path / "c")
    assert again.results.warnings == []


@pytest.mark.parametrize("name, text, message", [
    ("empty.jsonl", "", "no questions: the file is empty or has only a header row"),
    ("header.csv", "question,A,B,answer\n", "no questions: the file is empty or has only"),
    ("quote.csv", 'question,A,B,answer\n"What is it?,a,b,A\nq,a,b,B\n',
     "a quoted field is opened and never closed"),
])
def test_data_problems_say_what_they_are(name, text, message, tmp_path, capsys, model_folder,
                                         no_model_load):
    (tmp_path / name).write_text(text)
    assert main(["run", "--task", "mine", "--data", str(tmp_path / name), "--shots", "0",
                 "--model", model_folder, "--no-store"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and name in err


def test_a_numeric_question_is_a_question(tmp_path):
    from localeval.data.mcq_loaders import load_local

    (tmp_path / "nums.jsonl").write_text(json.dumps(
        {"question": 1024, "A": "2^10", "B": "2^9", "answer": "A"}) + "\n")
    (item,) = load_local(tmp_path / "nums.jsonl")["nums"]["test"]
    assert item.question == "1024"
