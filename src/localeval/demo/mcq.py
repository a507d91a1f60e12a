"""The multiple-choice demo: TMLU's format on 40 sample questions bundled with the package."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from rich.console import Console
from rich.text import Text as RichText

from ..api import evaluate
from ..data.rows import read_rows
from ..records.mcq import MCQResults
from ..render.formats import print_table
from ..report.html import write_report
from ..views.base import of_kind
from ..views.mcq_tables import discipline_table
from .model import build_demo_model

SAMPLE_MCQ = files("localeval") / "data" / "sample" / "tmlu"


def _sample_texts(folder: Path) -> list[str]:
    return [str(v) for f in sorted(folder.glob("*.jsonl")) for _, row in read_rows(f)
            for v in row.values()]


def run_mcq_demo(output: Path, console: Console, quiet: bool = False) -> None:
    """5-shot likelihood on the sample subjects; prints the Table 3 layout (the rest of the
    tables: ``localeval show`` on the run folder)."""
    sample = Path(str(SAMPLE_MCQ))
    model_dir = build_demo_model(output / "demo-model", _sample_texts(sample))
    folder = output / "tmlu-likelihood"
    result = evaluate(task="tmlu", model=f"hf:{model_dir}", data=sample, shots=5,
                      method="likelihood", output=folder, quiet=quiet,
                      cache=folder / "cache.sqlite",  # a rerun: seconds
                      command=["localeval", "demo"], store=False)  # the demo is no result
    print_table(console, discipline_table(of_kind(result, MCQResults,
                                                  "a multiple-choice run").results))
    report = write_report([folder])
    console.print(RichText(f"Every table: localeval show {folder}; the HTML report: "
                           f"{report}\n"))
