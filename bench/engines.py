"""The same 5-shot CMMLU likelihood run through three engines, whole processes, in one
invocation: ``hf:`` (our prefix-tree forward passes), ``vllm:`` (vLLM's engine in process) and
``openai:`` against vLLM's OpenAI server (started once before, its start-up reported apart).

The model is a seeded random Llama with SmolLM2-135M's shape (head size 64, which vLLM's CPU
attention needs) at reduced depth, float32, around the real SmolLM2 tokenizer. vLLM is the CPU
build in its own venv (tests/vllm_server.py builds it once). A random model's answer letters are
anywhere in its vocabulary, so the server is started with ``--max-logprobs 49152`` and asked for
every log-prob of the vocabulary (a real model's letters are among the default 20, and such a
reply is ~2,500 times smaller). Prints wall-time medians, peak RSS of the localeval process,
and the agreement of each engine's log-probs with ``hf:``'s.

    python bench/engines.py --subjects arts,virology --layers 4 --repeats 3
    python bench/engines.py --scoring top-k,echo   # one openai→vLLM row per scoring mode

``--scoring`` passes ``--scoring MODE`` to each ``openai:`` run, one row per mode (for a
localeval whose ``openai:`` backend has that flag); without it the ``openai:`` run uses the
backend's default (top-k log-probs) and no flag is passed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from tiny_models import SHARED, make_model  # noqa: E402
from vllm_server import VllmServer, vllm_env, vllm_python  # noqa: E402
from whole_process import timed  # noqa: E402

BIN = Path(sys.executable).parent


def samples(folder: Path) -> dict[str, dict]:
    lines = (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    return {s["id"]: s for s in map(json.loads, lines)}


def folder_of(work: Path, engine: str) -> Path:
    return work / engine.replace("→", "-").replace(" ", "-")


def agreement(ours: dict[str, dict], hf: dict[str, dict]) -> str:
    worst = max(abs(ours[i]["logprobs"][k] - v) for i, s in hf.items()
                for k, v in s["logprobs"].items())
    same = sum(ours[i]["pred"] == s["pred"] for i, s in hf.items())
    return f"letters equal {same}/{len(hf)}, max |Δ log-prob| {worst:.1e}"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--subjects", default="arts,virology")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--limit", help="questions per subject (default: all)")
    p.add_argument("--work", default=str(HERE / "out" / "engines"))
    p.add_argument("--scoring", help="comma-separated openai: scoring modes, a row each")
    args = p.parse_args()

    work = Path(args.work)
    model = make_model(work / f"smollm2-135m-{args.layers}l", arch="smollm2-135m",
                       layers=args.layers, chat=False)
    common = ["run", "--task", "cmmlu", "--data", str(SHARED / "data" / "cmmlu"), "--subjects",
              args.subjects, "--shots", "5", "--method", "likelihood",
              "--no-cache", "--no-store", "--no-report", "--quiet", "--overwrite",
              *(["--limit", args.limit] if args.limit else [])]
    env = {**vllm_env(), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    python = vllm_python()
    server_log = work / "vllm-server.log"
    started = time.perf_counter()
    server = VllmServer(model, server_log, "--max-logprobs", "49152")
    server_start = time.perf_counter() - started
    commands = {
        "hf": [str(BIN / "localeval"), *common, "--model", f"hf:{model}", "--device", "cpu",
               "--dtype", "float32"],
        "vllm": [str(python), "-m", "localeval.cli", *common, "--model", f"vllm:{model}",
                 "--dtype", "float32", "--model-args", "enforce_eager=true,max_model_len=4096"],
    }
    openai = [str(BIN / "localeval"), *common, "--model", "openai:tiny", "--base-url",
              server.url, "--top-logprobs", "49152"]
    for mode in args.scoring.split(",") if args.scoring else [None]:
        name = f"openai→vLLM {mode}" if mode else "openai→vLLM"
        commands[name] = [*openai, *(["--scoring", mode] if mode else [])]
    runs: dict[str, list[tuple[float, float]]] = {k: [] for k in commands}
    try:
        for rep in range(args.repeats):
            for name, cmd in commands.items():
                out = folder_of(work, name)
                wall, rss = timed([*cmd, "--output", str(out)], env)
                runs[name].append((wall, rss))
                print(f"rep {rep + 1} {name:12s} {wall:7.1f} s  peak RSS {rss:7.0f} MiB",
                      flush=True)
    finally:
        server.stop()

    hf = samples(work / "hf")
    print()
    print(f"questions: {len(hf)} ({args.subjects}), SmolLM2-135M shape, {args.layers} layers, "
          f"float32, CPU threads: {os.cpu_count()}; vLLM server start-up {server_start:.0f} s "
          "(not in the times below)")
    base = statistics.median(w for w, _ in runs["hf"])
    for name, timings in runs.items():
        med = statistics.median(w for w, _ in timings)
        note = "" if name == "hf" else "  " + agreement(samples(folder_of(work, name)), hf)
        print(f"{name:12s} wall median {med:6.1f} s ({base / med:4.2f}x hf's speed)  "
              f"peak RSS {max(r for _, r in timings):6.0f} MiB{note}")


if __name__ == "__main__":
    main()
