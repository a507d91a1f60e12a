"""Annotation agreement and aggregation: hand-computed values, XSTest's real double
annotations, and one clear line for bad input."""

from __future__ import annotations

import csv
import json
from collections import Counter

import pytest

from localeval.cli import main
from localeval.metrics.agreement import agreement
from localeval.tools.annotations import aggregate, majority

XSTEST = ["gpt4", "llama2new", "llama2orig", "mistralguard", "mistralinstruct"]


def test_hand_computed_two_annotators():
    # 6 items, agree on 4. Cohen: po = 4/6, pe = .5*.5 + .5*.5 = .5 -> (2/3 - 1/2) / (1/2) = 1/3.
    # Fleiss with 2 raters: P-bar = 4/6, Pe = .5 -> 1/3. Krippendorff (nominal): coincidences
    # o_yy = o_nn = 4, o_yn = o_ny = 2, n = 12, Do = 4/12, De = 2*6*6/(12*11) -> 1 - 11/18 = 7/18.
    table = [["y", "y"], ["y", "n"], ["n", "n"], ["n", "n"], ["y", "y"], ["n", "y"]]
    got = agreement(table, ["n", "y"])
    assert got["percent_agreement"] == pytest.approx(4 / 6)
    assert got["cohen_kappa"] == pytest.approx(1 / 3)
    assert got["fleiss_kappa"] == pytest.approx(1 / 3)
    assert got["krippendorff_alpha"] == pytest.approx(7 / 18)


def test_missing_labels_and_three_annotators():
    table = [["a", "a", "a"], ["a", "b", None], ["b", "b", "b"], [None, None, "a"]]
    got = agreement(table, ["a", "b"])
    # pairwise shares: item 1: 3/3, item 2: 0/1, item 3: 3/3; item 4 has one label only
    assert got["percent_agreement"] == pytest.approx(2 / 3)
    assert got["fleiss_kappa"] == pytest.approx(1.0)  # the two complete items agree fully
    assert got["cohen_kappa"] != got["cohen_kappa"]  # NaN: Cohen's is for two annotators


@pytest.mark.parametrize("name", XSTEST)
def test_xstest_double_annotations(shared, name, capsys):
    path = shared / "data" / "xstest" / "model_completions" / f"xstest_v2_completions_{name}.csv"
    with path.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert main(["agreement", "--data", str(path), "--columns", "annotation_1,annotation_2",
                 "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert set(got) >= {"n_items", "percent_agreement", "cohen_kappa", "fleiss_kappa",
                        "krippendorff_alpha"}
    # The file's own agreement column, counted by hand.
    assert got["n_items"] == len(rows) == 450
    assert got["percent_agreement"] == pytest.approx(
        sum(r["agreement"] == "TRUE" for r in rows) / len(rows))
    # Cohen's kappa from the confusion counts: (po - pe) / (1 - pe).
    a, b = [r["annotation_1"] for r in rows], [r["annotation_2"] for r in rows]
    ca, cb, n = Counter(a), Counter(b), len(rows)
    po = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pe = sum(ca[k] * cb[k] for k in ca) / n**2
    assert got["cohen_kappa"] == pytest.approx((po - pe) / (1 - pe))
    assert -1 <= got["krippendorff_alpha"] <= 1 and -1 <= got["fleiss_kappa"] <= 1


def test_majority_rule():
    assert majority(["harmful", "harmful", "harmful", "safe"]) == "harmful"  # 3 of 4
    assert majority(["harmful", "harmful", "safe", "safe"]) == "sensitive"  # 2-2: no majority
    assert majority(["safe", "safe", None]) == "safe"
    assert majority(["safe", "harmful", "sensitive"]) == "sensitive"
    assert majority(["harmful", "harmful", "safe"], min_share=0.7) == "sensitive"
    assert majority([None, None]) is None


def test_aggregate_writes_every_label(tmp_path):
    data = tmp_path / "ann.csv"
    data.write_text("id,prompt,a,b,c,d\n1,p1,safe,safe,safe,harmful\n"
                    "2,p2,safe,harmful,safe,harmful\n3,p3,harmful,,harmful,\n", encoding="utf-8")
    out = tmp_path / "labels.jsonl"
    summary = aggregate(data, ["a", "b", "c", "d"], out)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["label"] for r in rows] == ["safe", "sensitive", "harmful"]
    assert rows[0]["d"] == "harmful" and rows[2]["n_labels"] == 2
    assert rows[0]["majority_share"] == 0.75
    assert summary["labels"] == {"safe": 1, "sensitive": 1, "harmful": 1}


def _one_line(argv, capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    return err


def test_bad_input_is_one_line(tmp_path, capsys):
    data = tmp_path / "ann.csv"
    data.write_text("id,a,b\n1,safe,safe\n2,safe,maybe\n", encoding="utf-8")
    err = _one_line(["agreement", "--data", str(data), "--columns", "a,z"], capsys)
    assert "field 'z'" in err and "the file has: id, a, b" in err
    assert "two or more annotator columns" in _one_line(
        ["agreement", "--data", str(data), "--columns", "a"], capsys)
    err = _one_line(["agreement", "--data", str(data), "--columns", "a,b",
                     "--labels", "safe,harmful"], capsys)
    assert "row 3, field 'b'" in err and "'maybe' is not one of safe, harmful" in err
    assert "--output must end in .csv or .jsonl" in _one_line(
        ["aggregate", "--data", str(data), "--columns", "a,b", "--output",
         str(tmp_path / "x.txt")], capsys)
