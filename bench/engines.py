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

import os
import statistics
import sys
from pathlib import Path

from vllm_bench import agreement, bench_env, bench_model, cmmlu_run, parser, samples, start_server
from vllm_server import vllm_python
from whole_process import timed

BIN = Path(sys.executable).parent


def folder_of(work: Path, engine: str) -> Path:
    return work / engine.replace("→", "-").replace(" ", "-")


def main() -> None:
    p = parser("engines")
    p.add_argument("--scoring", help="comma-separated openai: scoring modes, a row each")
    args = p.parse_args()

    work, model = Path(args.work), bench_model(args)
    common, env = cmmlu_run(args), bench_env()
    python = vllm_python()
    server, server_start = start_server(model, work)
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
