"""localeval vs lm-evaluation-harness: 5-shot CMMLU likelihood, same model, data, CPU and format.

Both harnesses run as whole processes (start-up included), alternating, several repetitions.
The model is a seeded random Llama with SmolLM2-135M's shape at reduced depth around the real
SmolLM2 tokenizer from ../shared. Prints wall-time medians and their ratio, tokens forwarded per
question, peak RSS of each process, and the agreement of predictions and log-probs.

    python bench/mcq_vs_lm_eval.py --subjects arts,virology --layers 4 --repeats 3
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
from whole_process import timed  # noqa: E402

BIN = Path(sys.executable).parent


def lm_eval_samples(folder: Path) -> dict[str, list[float]]:
    out = {}
    for f in folder.rglob("samples_*.jsonl"):
        for line in f.read_text(encoding="utf-8").splitlines():
            s = json.loads(line)
            # the CLI writes log-likelihoods as strings
            out[s["doc"]["Question"] + "|" + s["doc"]["A"]] = [float(r[0][0]) for r in s["resps"]]
    return out


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


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--subjects", default="arts,virology")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--batch-size", default="8", help="lm-eval's batch size (ours: auto)")
    p.add_argument("--work", default=str(HERE / "out" / "mcq"))
    p.add_argument("--timings", help=argparse.SUPPRESS)  # "s/MiB,...;s/MiB,...": analyse only
    args = p.parse_args()

    work = Path(args.work)
    subjects = args.subjects.split(",")
    data = SHARED / "data" / "cmmlu"
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
    if args.timings:  # re-analyse the outputs of an earlier invocation
        for name, text in zip(runs, args.timings.split(";")):
            runs[name] = [tuple(map(float, pair.split("/"))) for pair in text.split(",")]
    for rep in range(0 if args.timings else args.repeats):
        for name, cmd in (("localeval", ours_cmd), ("lm-eval", theirs_cmd)):
            wall, rss = timed(cmd, env)
            runs[name].append((wall, rss))
            print(f"rep {rep + 1} {name:9s} {wall:7.1f} s  peak RSS {rss:7.0f} MiB", flush=True)

    results = json.loads((work / "ours" / "results.json").read_text())
    samples = [json.loads(x) for x in (work / "ours" / "samples.jsonl").read_text().splitlines()]
    peer = lm_eval_samples(work / "theirs")
    rows = {}
    for s in subjects:
        import csv

        with open(data / "test" / f"{s}.csv", encoding="utf-8") as f:
            for r in csv.DictReader(f):
                rows[f"{s}/{r['']}"] = r["Question"] + "|" + r["A"]
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
    print(f"questions: {n} ({args.subjects}), model: SmolLM2-135M shape, {args.layers} layers, "
          f"float32, CPU threads: {os.cpu_count()}")
    print(f"wall median  localeval {med['localeval']:.1f} s   lm-eval {med['lm-eval']:.1f} s   "
          f"speed-up {med['lm-eval'] / med['localeval']:.2f}x")
    print(f"tokens forwarded per question  localeval {forwarded:.1f}   lm-eval {prompt_tokens:.1f} "
          f"(whole prompt; its one-token continuations share one forward pass per question)")
    bound = unique_token_bound(model, [s["prompt"] for s in samples],
                               [s["subject"] for s in samples]) / n
    padded = forwarded + timing["padding_tokens"] / n
    print(f"unique-token lower bound per question {bound:.1f} (each subject's common prefix once "
          f"+ each question's own tokens); localeval / bound = {forwarded / bound:.3f} "
          f"({padded / bound:.3f} counting batch padding)")
    print(f"peak RSS  localeval {peak['localeval']:.0f} MiB   lm-eval {peak['lm-eval']:.0f} MiB")
    print(f"agreement  identical predicted letters {same}/{n}, max |Δ log-prob| {worst:.2e}")


if __name__ == "__main__":
    main()
