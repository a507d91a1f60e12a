"""``localeval demo``: the whole flow, offline, on sample data bundled with the package."""

from __future__ import annotations

from pathlib import Path

from ..report.console import make_console
from .mcq import run_mcq_demo
from .safety import run_safety_demo


def run_demo(output: Path, quiet: bool = False) -> None:
    """A short summary: the headline table of each run and where its folder is."""
    console = make_console()
    console.print("[bold]localeval demo[/bold] — offline, on 40 sample questions written for "
                  "this project (5 TMLU-style subjects, 5 dev + 3 test each).")
    console.print("[yellow]The demo model is RANDOM (a seeded, untrained 2-layer Llama): its "
                  "accuracy is chance-level and means nothing. Use --model hf:<your model> with "
                  "`localeval run` for real numbers.[/yellow]")
    run_mcq_demo(Path(output), console, quiet)
    run_safety_demo(Path(output), console, quiet=quiet)
