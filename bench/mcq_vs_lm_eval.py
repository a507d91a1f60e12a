"""localeval vs lm-evaluation-harness: 5-shot CMMLU likelihood, same model, data, CPU and format.

Both harnesses run as whole processes (start-up included), alternating, several repetitions.
The model is a seeded random Llama with SmolLM2-135M's shape at reduced depth around the real
SmolLM2 tokenizer from ../shared (``--hidden N``: a plain Llama of that width instead). Prints
wall-time medians and their ratio, tokens forwarded per question against the unique-token
bound, peak RSS of each process, the agreement of predictions and log-probs, and (``--bare
N``) the time per forwarded token of our run's scoring phase against a bare transformers
forward of N questions' whole prompts, one row at a time, in this process.

    python bench/mcq_vs_lm_eval.py --subjects arts,virology --layers 4 --repeats 3
    # issue 39's workload: 558 questions, a 6-layer hidden-384 Llama
    python bench/mcq_vs_lm_eval.py --subjects sociology,journalism,world_religions \
        --layers 6 --hidden 384 --repeats 2 --bare 40
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from lm_eval_peer import write_task_configs  # noqa: E402
from tiny_models import SHARED, make_model  # noqa: E402
from whole_process import timed_usage, trie_tokens  # noqa: E402

BIN = Path(sys.executable).parent


def lm_eval_samples(folder: Path) -> dict[str, list[float]]:
    out = {}
    for f in folder.rglob("samples_*.jsonl"):
        for line in f.read_text(encoding="utf-8").splitlines():
            s = json.loads(line)
            # the CLI writes log-likelihoods as strings
            out[_key(s["doc"])] = [float(r[0][0]) for r in s["resps"]]
    return out


def _key(row: dict) -> str:
    """A question by its text and all four options (CMMLU repeats a question and its A
    with other options: keyed by question and A alone, 4 of issue 39's 558 collided)."""
    return "|".join(row[k] for k in ("Question", "A", "B", "C", "D"))


def unique_token_bound(model: Path, prompts: list[str], subjects: list[str]) -> int:
    """Per subject: the prompts' common token prefix once, plus every prompt's remaining tokens."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model)
    total = 0
    for subject in sorted(set(subjects)):
        ids = [tok(p)["input_ids"] for p, s in zip(prompts, subjects) if s == subject]
        common = len(os.path.commonprefix(ids))
        total += common + sum(len(x) - common for x in ids)
    return total


def bare_forward(model: Path, prompts: list[str]) -> tuple[float, int]:
    """(seconds, tokens) of plain transformers forward passes over ``prompts``, one row each,
    float32, eager attention, no gradient: the cost of a token with nothing of ours around it."""
    import time

    import torch
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(model)
    lm = transformers.AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32,
                                                           attn_implementation="eager").eval()
    rows = [torch.tensor([tok(p)["input_ids"]]) for p in prompts]
    with torch.no_grad():
        lm(rows[0])  # warm-up
        start = time.perf_counter()
        for ids in rows:
            lm(ids)
    return time.perf_counter() - start, sum(r.shape[1] for r in rows)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--subjects", default="arts,virology")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, help="a plain Llama of this width (default: "
                   "SmolLM2-135M's shape)")
    p.add_argument("--bare", type=int, default=0, help="questions for the bare-forward "
                   "comparison (0: none)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--batch-size", default="8", help="lm-eval's batch size (ours: auto)")
    p.add_argument("--work", default=str(HERE / "out" / "mcq"))
    p.add_argument("--timings", help=argparse.SUPPRESS)  # "s/MiB,...;s/MiB,...": analyse only
    args = p.parse_args()

    work = Path(args.work)
    subjects = args.subjects.split(",")
    data = SHARED / "data" / "cmmlu"
    if args.hidden:
        model = make_model(work / f"llama-{args.layers}x{args.hidden}", layers=args.layers,
                           hidden=args.hidden, chat=False)
    else:
        model = make_model(work / f"smollm2-135m-{args.layers}l", arch="smollm2-135m",
                           layers=args.layers, chat=False)
    tasks = write_task_configs(work / "lm_eval_tasks", data, subjects)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}

    ours_cmd = [str(BIN / "localeval"), "run", "--task", "cmmlu", "--data", str(data),
                "--subjects", args.subjects, "--model", f"hf:{model}", "--shots", "5",
                "--method", "likelihood", "--prompt-style", "lm-eval", "--dtype", "float32",
                "--device", "cpu", "--no-cache", "--quiet", "--output", str(work / "ours")]
    theirs_cmd = [str(BIN / "lm_eval"), "--model", "hf",
                  "--model_args", f"pretrained={model},dtype=float32", "--tasks", ",".join(tasks),
                  "--include_path", str(work / "lm_eval_tasks"), "--num_fewshot", "5",
                  "--batch_size", args.batch_size, "--device", "cpu", "--log_samples",
                  "--output_path", str(work / "theirs")]

    runs: dict[str, list[tuple[float, float]]] = {"localeval": [], "lm-eval": []}
    cpus: dict[str, list[float]] = {"localeval": [], "lm-eval": []}
    if args.timings:  # re-analyse the outputs of an earlier invocation
        for name, text in zip(runs, args.timings.split(";")):
            runs[name] = [tuple(map(float, pair.split("/"))) for pair in text.split(",")]
    for rep in range(0 if args.timings else args.repeats):
        for name, cmd in (("localeval", ours_cmd), ("lm-eval", theirs_cmd)):
            wall, rss, cpu = timed_usage(cmd, env)
            runs[name].append((wall, rss))
            cpus[name].append(cpu)
            print(f"rep {rep + 1} {name:9s} {wall:7.1f} s  CPU {cpu:7.1f} s  peak RSS "
                  f"{rss:7.0f} MiB", flush=True)

    results = json.loads((work / "ours" / "results.json").read_text())
    samples = [json.loads(x) for x in (work / "ours" / "samples.jsonl").read_text().splitlines()]
    peer = lm_eval_samples(work / "theirs")
    rows = {}
    for s in subjects:
        import csv

        with open(data / "test" / f"{s}.csv", encoding="utf-8") as f:
            for r in csv.DictReader(f):
                rows[f"{s}/{r['']}"] = _key(r)
    same, worst = 0, 0.0
    for s in samples:
        theirs = peer[rows[s["id"]]]
        mine = [s["logprobs"][k] for k in "ABCD"]
        same += "ABCD"[theirs.index(max(theirs))] == s["pred"]
        worst = max(worst, *(abs(a - b) for a, b in zip(mine, theirs)))

    n = len(samples)
    timing = results["timing"]
    prompt_tokens = timing["prompt_tokens"] / n  # a whole prompt per question: what lm-eval forwards
    forwarded = timing["forwarded_tokens"] / n
    med = {k: statistics.median(w for w, _ in v) for k, v in runs.items()}
    peak = {k: max(r for _, r in v) for k, v in runs.items()}
    print()
    shape = f"Llama hidden {args.hidden}" if args.hidden else "SmolLM2-135M shape"
    print(f"questions: {n} ({args.subjects}), model: {shape}, {args.layers} layers, "
          f"float32, CPU threads: {os.cpu_count()}")
    print(f"wall median  localeval {med['localeval']:.1f} s   lm-eval {med['lm-eval']:.1f} s   "
          f"speed-up {med['lm-eval'] / med['localeval']:.2f}x")
    if cpus["localeval"]:
        cpu = {k: statistics.median(v) for k, v in cpus.items()}
        print(f"CPU seconds median  localeval {cpu['localeval']:.1f}   lm-eval "
              f"{cpu['lm-eval']:.1f}   ratio {cpu['lm-eval'] / cpu['localeval']:.2f}x")
    print(f"tokens forwarded per question  localeval {forwarded:.1f}   lm-eval {prompt_tokens:.1f} "
          f"(whole prompt; its one-token continuations share one forward pass per question)")
    bound = unique_token_bound(model, [s["prompt"] for s in samples],
                               [s["subject"] for s in samples]) / n
    padded = forwarded + timing["padding_tokens"] / n
    print(f"unique-token lower bound per question {bound:.1f} (each subject's common prefix once "
          f"+ each question's own tokens); localeval / bound = {forwarded / bound:.3f} "
          f"({padded / bound:.3f} counting batch padding)")
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model)
    trie = trie_tokens([tok(s["prompt"])["input_ids"] for s in samples]) / n
    print(f"unique tokens per question (the prompts' token trie: every distinct prefix once) "
          f"{trie:.1f}; localeval / trie = {forwarded / trie:.3f}")
    print(f"peak RSS  localeval {peak['localeval']:.0f} MiB   lm-eval {peak['lm-eval']:.0f} MiB")
    print(f"agreement  identical predicted letters {same}/{n}, max |Δ log-prob| {worst:.2e}")
    if args.bare:
        seconds, tokens = bare_forward(model, [s["prompt"] for s in samples[:args.bare]])
        ours = timing["seconds"] / timing["forwarded_tokens"]
        print(f"time per forwarded token  localeval {1e6 * ours:.1f} µs (its scoring phase, "
              f"last run: {timing['seconds']:.2f} s / {timing['forwarded_tokens']} tokens)   "
              f"bare transformers forward {1e6 * seconds / tokens:.1f} µs ({args.bare} whole "
              f"prompts, one row each: {seconds:.2f} s / {tokens} tokens)   ratio "
              f"{ours / (seconds / tokens):.2f}")


if __name__ == "__main__":
    main()
