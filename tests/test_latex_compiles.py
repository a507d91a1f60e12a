"""``localeval export --format latex`` compiles: every table of a real multiple-choice run
(subjects named in Chinese, Thai, Vietnamese and with LaTeX's special characters) and of a real
safeguard run (Table 2, sparklines, arrows, minus signs), wrapped in a minimal document with
booktabs, goes through pdflatex with no error and no missing character.

pdflatex is Debian's ``texlive-latex-base`` (booktabs is in ``texlive-latex-recommended``).
Without it the test is skipped, unless ``LOCALEVAL_REQUIRE_PDFLATEX`` is set (CI sets it): then
it fails."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from offline_runs import mcq_run, safeguard_run

from localeval.cli import main

DOCUMENT = r"""\documentclass{article}
\usepackage{booktabs}
\begin{document}
%s
\end{document}
"""


@pytest.fixture
def pdflatex() -> str:
    path = os.environ.get("LOCALEVAL_PDFLATEX") or shutil.which("pdflatex")
    if path:
        return path
    if os.environ.get("LOCALEVAL_REQUIRE_PDFLATEX"):
        pytest.fail("pdflatex not found (apt-get install texlive-latex-base "
                    "texlive-latex-recommended); LOCALEVAL_REQUIRE_PDFLATEX is set")
    pytest.skip("pdflatex not installed (Debian: apt-get install texlive-latex-base "
                "texlive-latex-recommended)")


def compile_export(binary: str, run_folder: Path, work: Path) -> tuple[str, str]:
    """Export the run as LaTeX files, \\input them all into one document and compile it with
    ``binary``; (the tables' text, pdflatex's log)."""
    tables = work / "tables"
    assert main(["export", str(run_folder), "--format", "latex", "--output", str(tables)]) == 0
    files = sorted(tables.glob("*.tex"))
    assert len(files) >= 2
    body = "\n".join(rf"\input{{tables/{f.name}}}\clearpage" for f in files)
    (work / "doc.tex").write_text(DOCUMENT % body, encoding="utf-8")
    done = subprocess.run([binary, "-interaction=nonstopmode", "-halt-on-error",
                           "-no-shell-escape", "doc.tex"], cwd=work, capture_output=True,
                          text=True, errors="replace", timeout=300)
    log = (work / "doc.log").read_text(errors="replace") if (work / "doc.log").exists() else ""
    assert done.returncode == 0, (done.stdout + log)[-3000:]
    assert (work / "doc.pdf").stat().st_size > 0
    return "\n".join(f.read_text(encoding="utf-8") for f in files), log


def _checked(text: str, log: str) -> list[str]:
    """Every line pdflatex reads is ASCII and no glyph is missing; the comment lines."""
    assert "Missing character" not in log
    lines = text.splitlines()
    assert all(line.isascii() for line in lines if not line.startswith("%"))
    return [line for line in lines if line.startswith("%")]


def test_an_mcq_run_compiles(pdflatex, tmp_path, capsys):
    record = mcq_run(tmp_path / "mcq" / "run")
    text, log = compile_export(pdflatex, record.folder, tmp_path / "latex")
    comments = _checked(text, log)
    # Chinese and Thai subject names as code points, said in a comment; Vietnamese folded.
    assert "{}[U+570B U+6587] & 3 & 0.00 & [0.0, 56.1]" in text
    assert "% [U+570B U+6587] = 國文" in comments
    assert any(line.endswith("= ภาษาไทย") for line in comments)
    assert "Tieng Viet & 2" in text and r"law\_\&\_order \#1 & 2" in text
    assert r"my-exam $\cdot$ likelihood" in text


def test_a_safeguard_run_compiles(pdflatex, tmp_path, capsys):
    record = safeguard_run(tmp_path / "safety")
    text, log = compile_export(pdflatex, record.folder, tmp_path / "latex")
    _checked(text, log)
    assert r"\quad 95\% CI $\pm$ &" in text  # the CI row under each model, indented
    assert r"EN $-$ SEA" in text
    assert "Scores by gold label" in text and "0 $\\rightarrow$ 1 &" not in text  # no sparkline
