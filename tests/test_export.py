"""`localeval export`: a run's tables as Markdown, LaTeX (booktabs) and CSV, against output
written by hand; and every table of a real safety run exported."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from localeval.cli import main
from localeval.store.runs import finished_record, save_run

RESULTS = {
    "schema": "localeval.mcq/1", "task": "tmlu", "method": "likelihood", "shots": 5,
    "cot": False, "model": "hf:org/tiny", "disciplines": ["STEM", "Social Science"],
    "paper_table": "Table 3", "n_samples": 4,
    "metrics": {
        # low/high: the Wilson score 95% interval of 2 of 4, 2 of 2, 0 of 2
        "micro": {"n": 4, "acc": 0.5, "stderr": 0.25, "low": 0.150039, "high": 0.849961},
        "macro": {"acc": 0.5, "stderr": 0.3}, "discipline_average": 0.5,
        "by_discipline": {"STEM": {"n": 2, "acc": 1.0, "stderr": 0.0},
                          "Social Science": {"n": 2, "acc": 0.0, "stderr": 0.0}},
        "by_subject": {"physics": {"n": 2, "acc": 1.0, "stderr": 0.0, "n_unanswered": 0,
                                   "low": 0.342380, "high": 1.0},
                       "law_&_order": {"n": 2, "acc": 0.0, "stderr": 0.0, "n_unanswered": 1,
                                       "low": 0.0, "high": 0.657620}},
    },
}

MARKDOWN = """\
**tmlu · likelihood · 5-shot · accuracy %**

| Model | STEM | Social Science | Average |
|---|---:|---:|---:|
| tiny | 100.00 | 0.00 | 50.00 |

Average = mean of the discipline columns (Table 3). Micro 50.00 \\[15.0, 85.0\\] over 4 questions \
(95% CI = Wilson score interval); macro 50.00: mean of the subjects.

**Subject accuracy**

| Subject | n | accuracy % | 95% CI | unanswered |
|---|---:|---:|---:|---:|
| law\\_&\\_order | 2 | 0.00 | [0.0, 65.8] | 1 |
| physics | 2 | 100.00 | [34.2, 100.0] | 0 |

95% CI = Wilson score interval.

"""

LATEX_SUBJECTS = r"""\begin{table}[t]
\centering
\caption{Subject accuracy. 95\% CI = Wilson score interval.}
\begin{tabular}{lrrrr}
\toprule
Subject & n & accuracy \% & 95\% CI & unanswered \\
\midrule
law\_\&\_order & 2 & 0.00 & [0.0, 65.8] & 1 \\
physics & 2 & 100.00 & [34.2, 100.0] & 0 \\
\bottomrule
\end{tabular}
\end{table}
"""

CSV_MAIN = "Model,STEM,Social Science,Average\ntiny,100.00,0.00,50.00\n"


def _folder(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    save_run(finished_record({"task": "tmlu"}, RESULTS, [], folder=folder))
    return folder


def test_markdown_by_hand(tmp_path, capsys):
    assert main(["export", str(_folder(tmp_path)), "--format", "md"]) == 0
    assert capsys.readouterr().out == MARKDOWN  # subjects as stored (results.json sorts keys)


def test_latex_and_csv_files_by_hand(tmp_path, capsys):
    folder = _folder(tmp_path)
    assert main(["export", str(folder), "--format", "latex", "--output",
                 str(tmp_path / "tex")]) == 0
    files = sorted(p.name for p in (tmp_path / "tex").iterdir())
    assert files == ["01-tmlu-likelihood-5-shot-accuracy.tex", "02-subject-accuracy.tex"]
    assert (tmp_path / "tex" / files[1]).read_text() == LATEX_SUBJECTS
    main_table = (tmp_path / "tex" / files[0]).read_text()
    assert r"\caption{tmlu $\cdot$ likelihood $\cdot$ 5-shot $\cdot$ accuracy \%. Average = mean" \
        in main_table
    assert r"Model & STEM & Social Science & Average \\" in main_table
    assert main(["export", str(folder), "--format", "csv", "--output",
                 str(tmp_path / "csv")]) == 0
    assert (tmp_path / "csv" / "01-tmlu-likelihood-5-shot-accuracy.csv").read_text() == CSV_MAIN


@pytest.mark.slow
def test_every_table_of_a_safety_run(shared, tmp_path, tiny_llama, capsys):
    out = tmp_path / "safety"
    assert main(["run", "--task", "safety-prompts", "--data",
                 str(shared / "data" / "jbb-multilingual" / "prompts.jsonl"), "--limit", "4",
                 "--guard", "llamaguard3", "--guard-option", "label_scores=full",
                 "--guard-option", "verdict_position=fixed",
                 "--model", f"hf:{tiny_llama}", "--bootstrap", "20",
                 "--output", str(out), "--quiet", "--all"]) == 0
    printed = capsys.readouterr().out
    assert main(["export", str(out), "--format", "md"]) == 0
    exported = capsys.readouterr().out
    titles = [line.strip("*") for line in exported.splitlines() if line.startswith("**")]
    assert len(titles) >= 5
    for title in titles:  # every exported table is one the console printed
        assert title.split(" · ")[0] in printed
    results = json.loads((out / "results.json").read_text())
    overall = results["overall"][0]
    assert f"{100 * overall['auprc']:.1f}" in exported


def test_export_needs_a_finished_run(tmp_path, capsys):
    folder = tmp_path / "running"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"run": {"status": "running"}}))
    assert main(["export", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{folder}: the run is running, not finished" in err


def test_csv_is_data_a_spreadsheet_can_read():
    from localeval.render.formats import to_csv
    from localeval.render.table import Interval, Number, Spark, TableBuilder, columns

    table = TableBuilder("t", columns("model", "task", "n", "B − A", "95% CI", text=2)
                         + columns("0 → 1"))
    table.add("=HYPERLINK(\"http://x\")", "prompt", 12, Number(-0.012, scale=100),
              Interval(-0.03, 0.005), Spark((0, 2, 8, 1)))
    table.add("95% CI ±", "", None, Number(0.015, scale=100, sign=True), Interval(None, None),
              Spark((8, 0, 1)), level=1)
    table.add("@SUM(A1)", "", 3, Number(None), Interval(0.0, 0.561), Spark((1,)))
    table.add("+cmd|' /C calc'!A0", "response", 0, Number(0.0), Interval(None, None), Spark(()))
    table = table.build()
    assert list(csv.reader(io.StringIO(to_csv(table)))) == [
        # no sparkline column; the sub-row's values are columns of the row it belongs to
        ["model", "task", "n", "B − A", "95% CI low", "95% CI high", "n 95% CI ±",
         "B − A 95% CI ±", "95% CI 95% CI ±"],
        ["'=HYPERLINK(\"http://x\")", "prompt", "12", "-1.2", "-3.0", "0.5", "", "1.5", ""],
        ["'@SUM(A1)", "prompt", "3", "", "0.0", "56.1", "", "", ""],  # the label above
        ["'+cmd|' /C calc'!A0", "response", "0", "0.0", "", "", "", "", ""]]


def test_a_real_safety_run_as_csv(tmp_path, capsys):
    from localeval.render.table import SPARK_BARS

    NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")  # a cell that is a number
    from offline_runs import safeguard_run

    record = safeguard_run(tmp_path / "run")
    assert main(["export", str(record.folder), "--format", "csv", "--output",
                 str(tmp_path / "csv")]) == 0
    files = sorted((tmp_path / "csv").glob("*.csv"))
    assert len(files) >= 8
    cells = [c for f in files for row in csv.reader(io.StringIO(f.read_text())) for c in row]
    assert not any(set(c) & set(SPARK_BARS.strip()) for c in cells)
    assert not any(c[:1].isspace() for c in cells)
    assert all(NUMBER.fullmatch(c) or c.startswith("'") for c in cells
               if c.startswith(("=", "+", "-", "@")))
    assert any(c.startswith("-") and NUMBER.fullmatch(c) for c in cells)  # gaps stay numbers
    table2 = next(f for f in files if "prompt-classification" in f.name).read_text()
    header, first = list(csv.reader(io.StringIO(table2)))[:2]
    assert "General EN 95% CI ±" in header and first[0] == "hashed-guard"  # one row per model
    assert len(list(csv.reader(io.StringIO(table2)))) == 2


def test_latex_symbols_by_hand():
    from localeval.render.latex import latex_escape

    originals = {}
    assert latex_escape("0 → 1 · ±2 − 3 … “ok” <a|b> 國文 Tiếng\n\nViệt", originals) == (
        r"0 $\rightarrow$ 1 $\cdot$ $\pm$2 $-$ 3 \ldots{} ``ok'' $<$a$|$b$>$ [U+570B U+6587] "
        "Tieng Viet")
    assert originals == {"[U+570B U+6587]": "國文"}


def test_csv_on_standard_output_is_one_table(tmp_path, capsys):
    folder = _folder(tmp_path)
    assert main(["export", str(folder), "--format", "csv"]) == 2
    err = capsys.readouterr().err
    assert "pass --table N (1 = tmlu · likelihood · 5-shot · accuracy %; 2 = Subject " \
        "accuracy)" in err and err.count("\n") == 1
    assert main(["export", str(folder), "--format", "csv", "--table", "2"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows[0] == ["Subject", "n", "accuracy %", "95% CI low", "95% CI high", "unanswered"]
    assert len(rows) == 3  # one table: its header and its two subjects, nothing else
    assert main(["export", str(folder), "--table", "3"]) == 2
    assert "--table 3: the run has 2 tables" in capsys.readouterr().err


def test_file_names_are_cut_between_words():
    from localeval.render.formats import slug

    title = "sea-safeguard · guard zero-shot · prompt classification · PR-AUC (trapezoid, the " \
            "paper's) (Table 2 layout)"
    assert slug(title) == "sea-safeguard-guard-zero-shot-prompt-classification-pr-auc"
    assert slug("Overall · mymodel") == "overall-mymodel" and slug("····") == "table"


def test_an_abbreviated_header_is_written_in_full_in_files():
    """Issue 69: "Taiwan Spe." (a terminal's abbreviation of Taiwan Specific) was cut in the
    Markdown and LaTeX exports too."""
    from localeval.render.formats import to_csv, to_markdown
    from localeval.render.latex import to_latex
    from localeval.render.table import Column, DataTable, Number, Row, Text

    table = DataTable("TMLU", (Column("Model"), Column("Taiwan Spe.", True, "Taiwan Specific")),
                      (Row((Text("m"), Number(0.5, scale=100))),))
    for render in (to_markdown, to_latex, to_csv):
        text = render(table)
        assert "Taiwan Specific" in text and "Spe." not in text, render.__name__
