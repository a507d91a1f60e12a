"""Start-up time of the command line, whole processes: ``localeval --help``, ``localeval tasks``,
a run against an unreachable HTTP server (it loads its data and stops before any model), and
(issue 39) a one-question ``hf:`` run of the CMMLU likelihood command on a 6-layer, hidden-384
random Llama, with the time from the command to its first forward pass, next to a bare
``import torch, transformers`` in the same venv.

``--baseline SRC`` times another checkout's ``src`` folder too (before/after a change), each
command alternating between the two, so a busy machine slows both alike; medians are printed,
with their ratio, and the load average before and after (the machine may be shared: CPU seconds
move less with it than wall seconds). ``--only TEXT`` times only the commands whose names hold
TEXT (given again for more), for more repeats in the same time.

Each timed ``src`` is byte-compiled first (``compileall``, into its git-ignored ``__pycache__``),
as an installed localeval is and as the floor's torch and transformers are: where
PYTHONDONTWRITEBYTECODE is set (it is in our sessions' shells), a checkout's modules were
otherwise compiled from source at every run, 0.2-0.3 s of CPU a one-question run (issue 65
item 3), growing with the code. ``--no-compile`` skips it: a folder without ``__pycache__``
(a fresh copy) is then timed as such a shell runs it.

The untimed first run (it writes the prompt the floor scores) also leaves the hf backend's
row-block probe of this model's layers in ``$XDG_CACHE_HOME/localeval/row_blocks.json``
(:mod:`localeval.backends.hf.row_blocks`), so the timed runs read it: a machine's first run of
a model shape pays the probe (5-7 s of CPU for this model on our loaded 2-core machine, issue
65 item 3), which this benchmark does not time.

    python bench/startup.py --repeats 7
    python bench/startup.py --repeats 5 --baseline /path/to/other/checkout/src
    python bench/startup.py --repeats 9 --only hf: --only bare
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from tiny_models import SHARED, make_model  # noqa: E402

OURS = str(HERE.parent / "src")
CLI = [sys.executable, "-m", "localeval.cli"]
# The CLI, with the time from the process's start to the first forward pass of the prefix
# tree printed to stderr (bench only: a wrapper around backends/hf/tree.py's _forward).
FIRST_FORWARD = """
import os, sys, time
start = float(os.environ["BENCH_T0"])
import localeval.backends.hf.tree as tree
forward = tree._forward
def first(*args, **kwargs):
    if not getattr(first, "seen", False):
        first.seen = True
        print(f"first-forward {time.time() - start:.3f}", file=sys.stderr)
    return forward(*args, **kwargs)
tree._forward = first
try:  # the console script's entry (an older checkout's: main)
    from localeval.cli.process import console
except ImportError:
    from localeval.cli import main as console
sys.exit(console())
"""


def seconds(argv: list[str], src: str | None) -> tuple[float, float, float | None]:
    """(wall seconds, CPU seconds (user + system: less sensitive than wall time to other work
    on the machine), seconds to the first forward pass or None)."""
    env = {**os.environ, "BENCH_T0": repr(time.time()), "HF_HUB_OFFLINE": "1"}
    if src:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    first = re.search(r"first-forward ([\d.]+)", done.stderr)
    return wall, cpu, float(first.group(1)) if first else None


# The floor of any transformers-based harness for the same question: load the tokenizer and
# the model, forward the question's whole 5-shot prompt once, read the four letters' log-probs.
BARE_SCORE = """
import sys, torch, transformers
model, prompt = sys.argv[1], open(sys.argv[2], encoding="utf-8").read()
tok = transformers.AutoTokenizer.from_pretrained(model)
lm = transformers.AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32,
                                                       attn_implementation="eager").eval()
ids = tok(prompt, return_tensors="pt").input_ids
letters = [tok(" " + c, add_special_tokens=False).input_ids[-1] for c in "ABCD"]
with torch.inference_mode():
    logits = lm(ids, logits_to_keep=1).logits[0, -1]
print(torch.log_softmax(logits.float(), -1)[letters].tolist())
"""


def first_prompt(one_question: list[str], tmp: Path) -> Path:
    """The one question's 5-shot prompt (lm-eval's format), from a run of the one-question
    command (untimed; it warms the disk cache as any first repetition would)."""
    out = tmp / "prompt-run"
    subprocess.run([*one_question, "--output", str(out)], check=True, capture_output=True,
                   env={**os.environ, "BENCH_T0": repr(time.time()),
                        "PYTHONPATH": os.pathsep.join(filter(None, [OURS, os.environ.get(
                            "PYTHONPATH")]))})
    sample = json.loads((out / "samples.jsonl").read_text(encoding="utf-8").splitlines()[0])
    path = tmp / "prompt.txt"
    path.write_text(sample["prompt"], encoding="utf-8")
    return path


def commands(tmp: Path) -> dict[str, tuple[list[str], bool]]:
    """name -> (argv, whether it runs localeval: timed with each checkout)."""
    model = make_model(tmp / "llama-6x384", layers=6, hidden=384, chat=False)
    cmmlu = ["--task", "cmmlu", "--data", str(SHARED / "data" / "cmmlu")]
    one_question = [
        sys.executable, "-c", FIRST_FORWARD, "run", *cmmlu, "--subjects", "sociology",
        "--limit", "1", "--model", f"hf:{model}", "--shots", "5", "--method", "likelihood",
        "--prompt-style", "lm-eval", "--dtype", "float32", "--device", "cpu", "--no-cache",
        "--no-store", "--quiet", "--overwrite"]
    return {
        "localeval --help": ([*CLI, "--help"], True),
        "localeval tasks": ([*CLI, "tasks"], True),
        "run up to the model (openai:, 2 CMMLU questions)": ([
            *CLI, "run", *cmmlu, "--subjects", "agronomy", "--limit", "2", "--model",
            "openai:x", "--base-url", "http://127.0.0.1:9/v1", "--no-cache", "--no-store",
            "--output", str(tmp / "run")], True),
        "one-question hf: run (6x384 Llama, report written)": (
            [*one_question, "--output", str(tmp / "one")], True),
        "bare: python -c 'import torch, transformers'": (
            [sys.executable, "-c", "import torch, transformers"], False),
        "bare: transformers scores the question (load, 1 forward)": (
            [sys.executable, "-c", BARE_SCORE, str(model), str(first_prompt(one_question, tmp))],
            False),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--baseline", help="another checkout's src folder, timed alternately")
    ap.add_argument("--only", action="append", metavar="TEXT",
                    help="time only the commands whose names hold TEXT (repeatable)")
    ap.add_argument("--no-compile", action="store_true",
                    help="do not byte-compile the timed src folders first")
    args = ap.parse_args()
    sides = {"ours": OURS, **({"baseline": args.baseline} if args.baseline else {})}
    if not args.no_compile:
        for src in sides.values():
            if not compileall.compile_dir(src, quiet=1):
                sys.exit(f"could not byte-compile {src}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{'not byte-compiled ahead' if args.no_compile else 'byte-compiled ahead'}")
    with tempfile.TemporaryDirectory() as tmp:
        cmds = commands(Path(tmp))
        if args.only:
            cmds = {n: c for n, c in cmds.items() if any(t in n for t in args.only)}
        walls = {(n, s): [] for n in cmds for s in sides}
        cpus = {(n, s): [] for n in cmds for s in sides}
        firsts = {(n, s): [] for n in cmds for s in sides}
        for _ in range(args.repeats):
            for name, (argv, ours) in cmds.items():
                for side, src in sides.items():  # alternating: the same load for both
                    wall, cpu, first = seconds(argv, src if ours else None)
                    walls[name, side].append(wall)
                    cpus[name, side].append(cpu)
                    if first is not None:
                        firsts[name, side].append(first)
        print(f"median wall seconds of {args.repeats} runs each (whole processes, "
              f"{' and '.join(sides)} alternating)")
        med = {k: statistics.median(v) for k, v in walls.items()}
        for name in cmds:
            row = "  ".join(f"{side} {med[name, side]:6.3f} s" for side in sides)
            if args.baseline:
                row += f"  ours/baseline {med[name, 'ours'] / med[name, 'baseline']:.2f}"
            print(f"  {name:<52} {row}")
            print(f"  {'':<52} CPU " + "  ".join(
                f"{side} {statistics.median(cpus[name, side]):6.3f} s" for side in sides))
            for side in sides:
                if firsts[name, side]:
                    print(f"  {'':<52} {side}: command to first forward pass "
                          f"{statistics.median(firsts[name, side]):.3f} s")
        bare_name = "bare: python -c 'import torch, transformers'"
        one_name = "one-question hf: run (6x384 Llama, report written)"
        floor_name = "bare: transformers scores the question (load, 1 forward)"
        cpu = {k: statistics.median(v) for k, v in cpus.items()}
        for side in sides:
            for ref in (bare_name, floor_name):
                if (one_name, side) not in med or (ref, "ours") not in med:
                    continue
                print(f"one-question run ({side}) / {ref.split(': ')[1]}: wall "
                      f"{med[one_name, side] / med[ref, 'ours']:.2f}x, CPU "
                      f"{cpu[one_name, side] / cpu[ref, 'ours']:.2f}x")
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
