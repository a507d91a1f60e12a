"""`localeval export`: a run's tables as Markdown, LaTeX (booktabs) and CSV, against output
written by hand; and every table of a real safety run exported."""

from __future__ import annotations

import json

import pytest

from localeval.cli import main
from localeval.store.runs import RunRecord, save_run

RESULTS = {
    "schema": "localeval.mcq/1", "task": "tmlu", "method": "likelihood", "shots": 5,
    "cot": False, "model": "hf:org/tiny", "disciplines": ["STEM", "Social Science"],
    "paper_table": "Table 3", "n_samples": 4,
    "metrics": {
        "micro": {"n": 4, "acc": 0.5, "stderr": 0.25}, "macro": {"acc": 0.5, "stderr": 0.3},
        "discipline_average": 0.5,
        "by_discipline": {"STEM": {"n": 2, "acc": 1.0, "stderr": 0.0},
                          "Social Science": {"n": 2, "acc": 0.0, "stderr": 0.0}},
        "by_subject": {"physics": {"n": 2, "acc": 1.0, "stderr": 0.0, "n_unanswered": 0},
                       "law_&_order": {"n": 2, "acc": 0.0, "stderr": 0.0, "n_unanswered": 1}},
    },
}

MARKDOWN = """\
**tmlu · likelihood · 5-shot · accuracy %**

| Model | STEM | Social Sci. | Average |
|---|---:|---:|---:|
| tiny | 100.00 | 0.00 | 50.00 |

Average = mean of the discipline columns (Table 3). Micro 50.00 ±25.00 over 4 questions; \
macro 50.00 ±30.00 over subjects.

**Subject accuracy**

| Subject | n | accuracy % | unanswered |
|---|---:|---:|---:|
| law_&_order | 2 | 0.00 ±0.00 | 1 |
| physics | 2 | 100.00 ±0.00 | 0 |

"""

LATEX_SUBJECTS = r"""\begin{table}[t]
\centering
\caption{Subject accuracy}
\begin{tabular}{lrrr}
\toprule
Subject & n & accuracy \% & unanswered \\
\midrule
law\_\&\_order & 2 & 0.00 $\pm$0.00 & 1 \\
physics & 2 & 100.00 $\pm$0.00 & 0 \\
\bottomrule
\end{tabular}
\end{table}
"""

CSV_MAIN = "Model,STEM,Social Sci.,Average\ntiny,100.00,0.00,50.00\n"


def _folder(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    save_run(RunRecord({"task": "tmlu"}, folder=folder, results=RESULTS, samples=[],
                       status="finished"))
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
    assert r"\caption{tmlu · likelihood · 5-shot · accuracy \%. Average = mean" in main_table
    assert r"Model & STEM & Social Sci. & Average \\" in main_table
    assert main(["export", str(folder), "--format", "csv", "--output",
                 str(tmp_path / "csv")]) == 0
    assert (tmp_path / "csv" / "01-tmlu-likelihood-5-shot-accuracy.csv").read_text() == CSV_MAIN


@pytest.mark.slow
def test_every_table_of_a_safety_run(shared, tmp_path, tiny_llama, capsys):
    out = tmp_path / "safety"
    assert main(["run", "--task", "safety-prompts", "--data",
                 str(shared / "data" / "jbb-multilingual" / "prompts.jsonl"), "--limit", "4",
                 "--guard", "llamaguard3", "--model", f"hf:{tiny_llama}", "--bootstrap", "20",
                 "--output", str(out), "--quiet"]) == 0
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
    assert "no results.json" in capsys.readouterr().err
