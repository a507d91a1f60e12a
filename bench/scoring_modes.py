"""What each ``--scoring`` mode of ``openai:`` costs against vLLM's server: the same 5-shot CMMLU
likelihood run, whole processes, in one invocation, with its HTTP requests, the bytes of the
replies and the wall time, and each mode's agreement with ``hf:`` on the same weights.

- ``top-k 49152``: the next token's top log-probs, the whole vocabulary of a random model (whose
  letters are anywhere in it; a trained model's are in the default 20), one request a question;
- ``echo``: prompt + each option echoed (lm-eval's ``local-completions`` way), 1 + 4 requests a
  question, exact at any cap;
- ``auto, top 20``: the default on a server with its defaults: the top 20 first, then echo for
  each question whose reply lacks an option (all of them, on a random model).

The model is a seeded random Llama with SmolLM2-135M's shape at reduced depth, float32, around the
real SmolLM2 tokenizer; vLLM is the CPU build (tests/vllm_server.py), started once with
``--max-logprobs 49152`` (its start-up is not in the times).

    python bench/scoring_modes.py --subjects arts,virology --layers 4 --repeats 3
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path

from vllm_bench import agreement, bench_env, bench_model, cmmlu_run, parser, samples, start_server
from whole_process import timed

BIN = Path(sys.executable).parent
MODES = {"top-k 49152": ["--scoring", "top-k", "--top-logprobs", "49152"],
         "echo": ["--scoring", "echo"],
         "auto, top 20": []}


def main() -> None:
    args = parser("scoring_modes").parse_args()
    work, model = Path(args.work), bench_model(args)
    common, env = [str(BIN / "localeval"), *cmmlu_run(args)], bench_env()
    timed([*common, "--model", f"hf:{model}", "--dtype", "float32", "--output",
           str(work / "hf")], env)
    server, server_start = start_server(model, work)
    walls: dict[str, list[float]] = {k: [] for k in MODES}
    try:
        for rep in range(args.repeats):
            for name, flags in MODES.items():
                out = work / name.replace(" ", "-").replace(",", "")
                wall, _ = timed([*common, "--model", "openai:tiny", "--base-url", server.url,
                                 *flags, "--output", str(out)], env)
                walls[name].append(wall)
                print(f"rep {rep + 1} {name:14s} {wall:7.1f} s", flush=True)
    finally:
        server.stop()

    hf = samples(work / "hf")
    print(f"\nquestions: {len(hf)} ({args.subjects}), 5-shot, SmolLM2-135M shape, "
          f"{args.layers} layers, float32, CPU threads: {os.cpu_count()}; vLLM server start-up "
          f"{server_start:.0f} s (not in the times below)")
    for name in MODES:
        out = work / name.replace(" ", "-").replace(",", "")
        timing = json.loads((out / "results.json").read_text())["timing"]
        # every HTTP call, the set-up ones (/v1/models, the /tokenize probes) included; a top-k
        # reply that lacks an option is a call but not a request served (served_by)
        print(f"{name:14s} wall median {statistics.median(walls[name]):6.1f} s  "
              f"{timing['http_calls']:5d} HTTP calls  "
              f"{timing['bytes_received'] / 2**20:8.1f} MiB received  "
              f"{agreement(samples(out), hf)}")


if __name__ == "__main__":
    main()
