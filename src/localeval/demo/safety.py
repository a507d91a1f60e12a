"""The safety demo: the zero-shot guard on bundled sample items, offline, with a random model.

The items (``data/sample/safety/items.jsonl``) were written for this project: mild requests in
English and the seven SEA-SafeguardBench languages, in the benchmark's three subsets. The model
is :func:`localeval.demo.model.build_demo_model`'s seeded random Llama, with its tokenizer trained on
these items and the guard's template, and a ChatML chat template added (the zero-shot guard
sends chat messages). Its verdicts are random; the demo shows the flow, the files and tables.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from rich.console import Console
from rich.text import Text as RichText

from ..api import evaluate
from ..data.rows import read_rows
from ..guards import zero_shot as z
from ..records.safety import SafetyResults
from ..render.formats import print_table
from ..report.html import write_report
from ..views.base import of_kind
from ..views.safety_tables import table2_tables
from .model import build_demo_model

SAMPLE_SAFETY = files("localeval") / "data" / "sample" / "safety" / "items.jsonl"


def _safety_texts(path: Path) -> list[str]:
    texts = [str(v) for _, row in read_rows(path) for v in row.values()]
    template = [z.PROMPT_TASK, z.RESPONSE_TASK, z.CATEGORIES, z.CULTURE, "Human user:",
                "AI assistant:"]
    verdicts = [f"assistant\n{label}" for label in z.LABELS]
    return texts + template + verdicts * 20  # make each verdict word one token


def build_safety_demo_model(folder: Path) -> Path:
    """The demo's random model, with a tokenizer that knows the safety texts."""
    return build_demo_model(folder, _safety_texts(Path(str(SAMPLE_SAFETY))))


def run_safety_demo(output: Path, console: Console | None = None, quiet: bool = False) -> None:
    """Evaluate the zero-shot guard on the sample items and print the Table 2 layout."""
    console = console or Console()
    console.print("[bold]localeval safety demo[/bold] — offline, on 41 sample rows written for "
                  "this project (English + id, ms, my, th, ta, tl, vi; general, cultural-itw, "
                  "cultural-cg).")
    console.print("[yellow]The guard model is RANDOM (a seeded, untrained 2-layer Llama): its "
                  "AUPRC is chance-level and means nothing. Use `localeval run --task "
                  "sea-safeguard --model hf:<your guard>` for real numbers.[/yellow]")
    model_dir = build_safety_demo_model(Path(output) / "safety-demo-model")
    # The whole distribution (label_scores=full): a random model almost never puts a label
    # among its top 2 tokens, so IRIS's top-2 reading (the default) would score no sample;
    # for the same reason it reads the first generated position (verdict_position=fixed), not
    # the first of 100 whose top 2 holds a label (the authors').
    folder = Path(output) / "sea-safeguard"
    result = evaluate(task="sea-safeguard", model=f"hf:{model_dir}", guard="zero-shot",
                      guard_options={"label_scores": "full", "verdict_position": "fixed"},
                      data=Path(str(SAMPLE_SAFETY)), output=folder,
                      cache=folder / "cache.sqlite",  # as `run` keeps
                      quiet=quiet, command=["localeval", "demo", "--safety"], n_resamples=200,
                      store=False)  # a random model is not a result for the leaderboard
    for table in table2_tables(of_kind(result, SafetyResults, "a safety run").results):
        print_table(console, table)
    report = write_report([folder])
    console.print(RichText(f"Every table (per language, gaps, Fig. 4-6 analyses): localeval "
                           f"show {folder}; the HTML report with figures and a sample "
                           f"browser: {report}"))
