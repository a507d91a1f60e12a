"""Start-up time of the command line (issue: under one second before any model loads): the
median wall time of ``localeval --help`` and of ``localeval tasks`` as whole processes, and of
a run against an unreachable HTTP server, which loads its data and stops before any model.

    python bench/startup.py --repeats 7
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from tiny_models import SHARED  # noqa: E402

CLI = [sys.executable, "-m", "localeval.cli"]


def seconds(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        commands = {
            "localeval --help": [*CLI, "--help"],
            "localeval tasks": [*CLI, "tasks"],
            "run up to the model (openai:, 2 CMMLU questions)": [
                *CLI, "run", "--task", "cmmlu", "--data", str(SHARED / "data" / "cmmlu"),
                "--subjects", "agronomy", "--limit", "2", "--model", "openai:x", "--base-url",
                "http://127.0.0.1:9/v1", "--no-cache", "--no-store", "--output",
                str(Path(tmp) / "run")],
        }
        print(f"median wall seconds of {args.repeats} runs each (whole process)")
        for name, argv in commands.items():
            times = [seconds(argv) for _ in range(args.repeats)]
            print(f"  {name:<52} {statistics.median(times):6.3f} s "
                  f"(min {min(times):.3f}, max {max(times):.3f})")


if __name__ == "__main__":
    main()
