"""``localeval demo``: the whole flow, offline, on sample data bundled with the package."""

from __future__ import annotations

from pathlib import Path

from ..errors import LocalevalError
from ..report.console import make_console
from .mcq import run_mcq_demo
from .safety import run_safety_demo

# What the demo writes in its --output folder (a rerun finds them there again).
DEMO_ENTRIES = frozenset({"demo-model", "tmlu-likelihood", "safety-demo-model",
                          "sea-safeguard"})


def check_demo_output(output: Path) -> None:
    """As ``run`` checks its folder: the demo writes into a new or empty folder, or one that
    holds only an earlier demo's folders (``--output /`` or a home folder is refused)."""
    if output.exists() and not output.is_dir():
        raise LocalevalError(f"--output {output} is a file; give a folder (made if missing)")
    if not output.is_dir():
        return
    others = sorted(p.name for p in output.iterdir() if p.name not in DEMO_ENTRIES)
    if others:
        shown = ", ".join(others[:3]) + (f" (+{len(others) - 3} more)" if len(others) > 3
                                         else "")
        raise LocalevalError(f"--output {output} holds other files ({shown}); the demo writes "
                             "into a new or empty folder, or an earlier demo's")


def run_demo(output: Path, quiet: bool = False) -> None:
    """A short summary: the headline table of each run and where its folder is."""
    check_demo_output(Path(output))
    console = make_console()
    console.print("[bold]localeval demo[/bold] — offline, on 40 sample questions written for "
                  "this project (5 TMLU-style subjects, 5 dev + 3 test each).")
    console.print("[yellow]The demo model is RANDOM (a seeded, untrained 2-layer Llama): its "
                  "accuracy is chance-level and means nothing. Use --model hf:<your model> with "
                  "`localeval run` for real numbers.[/yellow]")
    run_mcq_demo(Path(output), console, quiet)
    run_safety_demo(Path(output), console, quiet=quiet)
