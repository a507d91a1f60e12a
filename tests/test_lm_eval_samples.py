"""Reading lm-eval's logged samples back by our sample ids (tests/lm_eval_peer.read_samples), on
files in the layout lm-eval 0.4.13's CLI writes: ``<output>/<model>/samples_<task>_<time>.jsonl``,
the CSV's unnamed index column as ``Unnamed: 0``, log-likelihoods as strings."""

import json

import pytest
from lm_eval_peer import read_samples


def _write(folder, task, stamp, docs):
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"doc_id": n, "doc": doc, "resps": [[[str(ll), "False"]] for ll in lls]},
                        ensure_ascii=False) for n, (doc, lls) in enumerate(docs)]
    (folder / f"samples_{task}_{stamp}.jsonl").write_text("\n".join(lines) + "\n",
                                                          encoding="utf-8")


def test_questions_are_keyed_by_subject_and_csv_row(tmp_path):
    # CMMLU repeats a question and its A with other options: the row index tells them apart
    doc = {"Question": "同一题", "A": "甲", "B": "乙", "C": "丙", "D": "丁", "Answer": "A"}
    _write(tmp_path / "model", "local_cmmlu_world_religions", "2026-11-26T12-00-00.1",
           [({"Unnamed: 0": 7, **doc}, [-1.5, -2.0, -0.25, -3.0]),
            ({"Unnamed: 0": 9, **doc, "D": "戊"}, [-4.0, -1.0, -2.0, -3.0])])
    _write(tmp_path / "model", "local_cmmlu_arts", "2026-11-26T12-00-00.1",
           [({"": 0, **doc}, [-1.0, -1.0, -1.0, -0.5])])
    assert read_samples(tmp_path) == {"world_religions/7": [-1.5, -2.0, -0.25, -3.0],
                                      "world_religions/9": [-4.0, -1.0, -2.0, -3.0],
                                      "arts/0": [-1.0, -1.0, -1.0, -0.5]}


def test_a_question_in_two_runs_files_is_refused(tmp_path):
    doc = {"Unnamed: 0": 3, "Question": "q", "A": "a", "B": "b", "C": "c", "D": "d"}
    for stamp in ("2026-11-26T12-00-00.1", "2026-11-26T12-05-00.2"):
        _write(tmp_path / "m", "local_cmmlu_arts", stamp, [(doc, [-1.0, -2.0, -3.0, -4.0])])
    with pytest.raises(ValueError, match="arts/3 is in more than one samples file"):
        read_samples(tmp_path)
