"""Text from data is never markup: subjects, years and a model named like rich markup, mathtext,
Markdown, LaTeX and a spreadsheet formula go through run, show, every export, the HTML report,
compare and the leaderboard, and each shows the text as it is (CSV: read back by a CSV reader,
after the formula guard; LaTeX: the text pdflatex prints; Markdown: the text a CommonMark
renderer shows). Before the tables were built as data, `[draft] physics` printed as ` physics`,
`[/bold] closing` crashed `run` and `show` (rich's MarkupError), and a year `$\\undefinedcmd{$`
failed the report after all the compute (matplotlib's mathtext). A model's output with Unicode
line separators keeps samples.jsonl one sample a line and every command reading it working."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
from html import unescape
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from offline_runs import SEPARATORS, AlwaysLetter, Writes, safeguard_run

from localeval import evaluate, load_results
from localeval.cli import main
from localeval.demo.mcq import SAMPLE_MCQ

HOSTILE = ["[draft] physics", "[/bold] closing", "$\\undefinedcmd{$", "a|b", "line one\nline two",
           '=HYPERLINK("x")']
MODEL = "org/[/red] model *bold* <b>x<\\b>"


class NamedModel(AlwaysLetter):
    def __init__(self):
        super().__init__("A")
        self.identity = {"backend": "always", "model": MODEL}


def _exam(folder: Path) -> Path:
    rows = [{"id": f"{s}-{i}", "subject": subject, "question": f"Q{i}?", "A": "a", "B": "b",
             "C": "c", "D": "d", "answer": "AB"[i % 2], "year": subject}
            for s, subject in enumerate(HOSTILE) for i in range(2)]
    path = folder / "exam.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


@pytest.fixture
def hostile_run(tmp_path):
    folder = tmp_path / "mk" / "[/red]x"  # a run folder named like markup too
    evaluate(task="my-exam", model=NamedModel(), data=_exam(tmp_path), shots=0, output=folder,
             quiet=True, report=True)
    return folder


def _shown(text: str) -> str:
    return " ".join(text.split())  # a table may put a newline of the data as a space


def test_show_and_the_report_show_the_text(hostile_run, capsys):
    assert main(["show", str(hostile_run)]) == 0
    printed = capsys.readouterr().out
    for name in HOSTILE:  # a cell holding a newline is two lines of the terminal's table
        assert all(part in printed for part in name.split("\n"))
    html = unescape((hostile_run / "report.html").read_text(encoding="utf-8"))
    for name in HOSTILE:
        assert name in html or _shown(name) in _shown(html)
    assert (hostile_run / "report_figures" / "accuracy_by_year.svg").exists()  # mathtext off


def test_csv_reads_back_the_text(hostile_run, tmp_path):
    assert main(["export", str(hostile_run), "--format", "csv", "--output",
                 str(tmp_path / "csv")]) == 0
    cells = {c for path in (tmp_path / "csv").glob("*.csv")
             for row in csv.reader(io.StringIO(path.read_text(encoding="utf-8"))) for c in row}
    for name in HOSTILE:
        expected = "'" + name if name.startswith("=") else name  # OWASP's formula guard
        assert expected in cells


def test_markdown_renders_the_text(hostile_run, capsys):
    assert main(["export", str(hostile_run), "--format", "md"]) == 0
    rendered = MarkdownIt("commonmark").enable("table").render(capsys.readouterr().out)
    cells = [unescape(c).replace("<br>", "\n") for c in _cells(rendered)]
    for name in HOSTILE:
        assert name in cells
    assert "<b>" not in rendered and "<em>" not in rendered  # **title** is ours


def _cells(html: str) -> list[str]:
    import re

    return [c for c in re.findall(r"<td[^>]*>(.*?)</td>", html, flags=re.S)]


def test_the_leaderboard_and_compare_show_the_folder_and_model(hostile_run, capsys):
    assert main(["leaderboard", "--task", "my-exam"]) == 0
    out = _shown(capsys.readouterr().out)
    assert "[/red]x" in out and "model *bold* <b>x" in out
    assert main(["compare", str(hostile_run), str(hostile_run)]) == 0
    out = _shown(capsys.readouterr().out)
    assert "[draft] physics" in out and "[/bold] closing" in out


def test_a_safety_run_in_a_folder_named_like_markup(tmp_path, capsys):
    record = safeguard_run(tmp_path / "[bold]" / "[/red]x")
    assert main(["show", str(record.folder)]) == 0
    assert main(["leaderboard", "--task", "sea-safeguard"]) == 0
    assert "[/red]x" in capsys.readouterr().out


@pytest.fixture
def pdf_tools() -> tuple[str, str]:
    found = shutil.which("pdflatex"), shutil.which("pdftotext")
    if all(found):
        return found
    if os.environ.get("LOCALEVAL_REQUIRE_PDFLATEX"):
        pytest.fail("pdflatex and pdftotext are needed (apt-get install texlive-latex-base "
                    "texlive-latex-recommended poppler-utils); LOCALEVAL_REQUIRE_PDFLATEX is set")
    pytest.skip("pdflatex or pdftotext not installed")


@pytest.mark.slow
def test_latex_prints_the_text(hostile_run, tmp_path, pdf_tools):
    pdflatex, pdftotext = pdf_tools
    assert main(["export", str(hostile_run), "--format", "latex", "--output",
                 str(tmp_path / "tex")]) == 0
    body = "\n".join(p.read_text() for p in sorted((tmp_path / "tex").glob("*.tex")))
    document = tmp_path / "doc.tex"
    document.write_text("\\documentclass{article}\\usepackage{booktabs}\\begin{document}\n"
                        f"{body}\n\\end{{document}}\n")
    done = subprocess.run([pdflatex, "-interaction=nonstopmode", "-halt-on-error",
                           document.name], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:]
    printed = subprocess.run([pdftotext, "-layout", "doc.pdf", "-"], cwd=tmp_path,
                             capture_output=True, text=True, check=True).stdout
    printed = printed.replace("\u201d", '"')  # pdflatex's default font types " as a closing quote
    for name in HOSTILE:
        assert _shown(name) in _shown(printed)


def test_a_line_separator_in_a_sample_keeps_the_run_readable(tmp_path, capsys):
    folder = tmp_path / "run"
    record = evaluate(task="tmlu", model=Writes(), data=str(SAMPLE_MCQ), method="generation",
                      output=folder, quiet=True, store=False)
    assert all(SEPARATORS in s["output"] for s in record.samples)
    raw = (folder / "samples.jsonl").read_text(encoding="utf-8")
    assert "\u2028" in raw  # written as it is (ensure_ascii=False), one sample a line
    assert raw.count("\n") == len(record.samples)
    again = load_results(folder)
    assert again.samples == record.samples
    for argv in (["show", str(folder)],
                 ["export", str(folder), "--format", "csv", "--table", "1"],
                 ["report", str(folder)], ["compare", str(folder), str(folder), "--json"]):
        assert main(argv) == 0, capsys.readouterr().err
    assert "unanswered" in json.loads((folder / "results.json").read_text())
