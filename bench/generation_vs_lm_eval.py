"""localeval vs lm-evaluation-harness's ``generate_until``: TMLU-format 5-shot CoT generation,
same model, data, CPU and prompt, whole processes, alternating.

Three commands per repetition, in turn: localeval at batch size 16, localeval at batch size 1,
lm-eval (its HF backend, ``generate_until``) at batch size 1. Prints wall-time medians and the
ratios, peak RSS, decode steps and tokens forwarded, and how many generated texts are identical
(ours at 16 vs ours at 1, ours vs lm-eval), with the first differing position of any that differ.

The model is a seeded random Llama of SmolLM2-135M's shape at reduced depth with an untied LM
head (so it writes varied text, not one repeated token) around the real SmolLM2 tokenizer. The
questions are CMMLU's (../shared/data/cmmlu), written as a TMLU-layout folder; CMMLU has no
explanations, so each few-shot demonstration gets a one-line stand-in ("逐一比較各選項，(X)
最符合題意。"). lm-eval gets the same prompt through a task config (description, doc_to_text
ending in the CoT cue, the explanation + answer as the shot's target, "\\n\\n" between shots);
the script checks the two harnesses' prompts are identical, text for text.

    python bench/generation_vs_lm_eval.py --questions 48 --max-tokens 64 --repeats 3
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from lm_eval_peer import LOCAL_JSONL  # noqa: E402
from tiny_models import SHARED, make_model  # noqa: E402
from whole_process import timed, trie_tokens  # noqa: E402

BIN = Path(sys.executable).parent
EXPLANATION = "逐一比較各選項，({answer}) 最符合題意。"

# lm-eval's view of the TMLU CoT prompt (localeval.tasks.prompts, style "tmlu", cot=True):
# description + shots joined by "\n\n" + "\n\n" + query, a shot being doc_to_text + its target.
TASK_YAML = "task: {task}\n" + LOCAL_JSONL + """output_type: generate_until
description: "以下選擇題為出自臺灣的考題，答案為其中一個選項。\\n\\n"
doc_to_text: "問題：{{{{question}}}}\\n(A) {{{{A}}}}\\n(B) {{{{B}}}}\\n(C) {{{{C}}}}\\n(D) {{{{D}}}}\\n讓我們一步一步思考。\\n"
doc_to_target: "{{{{explanation}}}}\\n正確答案：({{{{answer}}}})"
target_delimiter: ""
fewshot_delimiter: "\\n\\n"
generation_kwargs:
  until: ["問題："]
  max_gen_toks: {max_tokens}
  do_sample: false
metric_list:
  - metric: exact_match
"""


def write_data(folder: Path, subject: str, questions: int) -> Path:
    """A TMLU-layout folder (dev.jsonl with explanations, test.jsonl) from a CMMLU subject.
    Texts are stripped and blank lines collapsed the way the TMLU prompt does, so lm-eval's
    template needs no filters to produce the same prompt."""
    out = folder / subject
    out.mkdir(parents=True, exist_ok=True)
    for split, limit in (("dev", 5), ("test", questions)):
        with open(SHARED / "data" / "cmmlu" / split / f"{subject}.csv", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))[:limit]
        lines = []
        for r in rows:
            row = {"question": r["Question"].replace("\n\n", "\n").strip(),
                   **{k: r[k].strip() for k in "ABCD"}, "answer": r["Answer"]}
            if split == "dev":
                row["explanation"] = EXPLANATION.format(answer=r["Answer"])
            lines.append(json.dumps(row, ensure_ascii=False))
        (out / f"{split}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def ours(folder: Path, data: Path) -> tuple[dict[str, tuple[str, str]], dict]:
    """question -> (prompt, generated text); and the run's timing. Sample ids are
    ``<subject>/test-<row number from 1>``."""
    rows = [json.loads(x) for x in (data / "test.jsonl").read_text().splitlines()]
    samples = [json.loads(x) for x in (folder / "samples.jsonl").read_text().splitlines()]
    results = json.loads((folder / "results.json").read_text())
    question = {s["id"]: rows[int(s["id"].rpartition("-")[2]) - 1]["question"] for s in samples}
    return ({question[s["id"]]: (s["prompt"], s["output"]) for s in samples}, results["timing"])


def theirs(folder: Path) -> dict[str, tuple[str, str]]:
    out = {}
    for f in folder.rglob("samples_*.jsonl"):
        for line in f.read_text(encoding="utf-8").splitlines():
            s = json.loads(line)
            out[s["doc"]["question"]] = (s["arguments"]["gen_args_0"]["arg_0"], s["resps"][0][0])
    return out


def agreement(a: dict[str, tuple[str, str]], b: dict[str, tuple[str, str]]) -> tuple[int, list]:
    """How many generated texts are identical; (question, first differing char) for the rest."""
    same, differ = 0, []
    for q, (_, text) in a.items():
        other = b[q][1]
        if text == other:
            same += 1
        else:
            at = next((i for i, (x, y) in enumerate(zip(text, other)) if x != y),
                      min(len(text), len(other)))
            differ.append((q[:20], at, len(text), len(other)))
    return same, differ


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--subject", default="arts", help="a CMMLU subject")
    p.add_argument("--questions", type=int, default=48)
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--work", default=str(HERE / "out" / "generation"))
    args = p.parse_args()

    work = Path(args.work)
    model = make_model(work / f"smollm2-135m-{args.layers}l-untied", arch="smollm2-135m",
                       layers=args.layers, chat=False, tied=False)
    data = write_data(work / "data", args.subject, args.questions)
    task = f"local_tmlu_cot_{args.subject}"
    (work / "lm_eval_tasks").mkdir(parents=True, exist_ok=True)
    (work / "lm_eval_tasks" / f"{task}.yaml").write_text(
        TASK_YAML.format(task=task, data=data.resolve(), max_tokens=args.max_tokens),
        encoding="utf-8")
    shutil.rmtree(work / "theirs", ignore_errors=True)  # lm-eval adds a file per run
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}

    def localeval(batch: int) -> list[str]:
        return [str(BIN / "localeval"), "run", "--task", "tmlu", "--data", str(data),
                "--model", f"hf:{model}", "--shots", "5", "--cot", "--method", "generation",
                "--max-tokens", str(args.max_tokens), "--dtype", "float32", "--device", "cpu",
                "--batch-size", str(batch), "--no-cache", "--quiet",
                "--output", str(work / f"ours-bs{batch}")]

    commands = {
        "localeval bs16": localeval(16),
        "localeval bs1": localeval(1),
        "lm-eval bs1": [str(BIN / "lm_eval"), "--model", "hf", "--model_args",
                        f"pretrained={model},dtype=float32", "--tasks", task,
                        "--include_path", str(work / "lm_eval_tasks"), "--num_fewshot", "5",
                        "--batch_size", "1", "--device", "cpu", "--log_samples",
                        "--output_path", str(work / "theirs")],
    }
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for rep in range(args.repeats):
        for name, cmd in commands.items():
            wall, rss = timed(cmd, env)
            runs[name].append((wall, rss))
            print(f"rep {rep + 1} {name:15s} {wall:7.1f} s  peak RSS {rss:6.0f} MiB", flush=True)

    batched, timing16 = ours(work / "ours-bs16", data)
    single, timing1 = ours(work / "ours-bs1", data)
    peer = theirs(work / "theirs")
    n = len(batched)
    same_prompts = sum(batched[q][0] == peer[q][0] for q in batched)
    med = {k: statistics.median(w for w, _ in v) for k, v in runs.items()}
    peak = {k: max(r for _, r in v) for k, v in runs.items()}
    print()
    print(f"{n} questions (CMMLU {args.subject} in the TMLU CoT format, 5-shot), up to "
          f"{args.max_tokens} new tokens, SmolLM2-135M shape at {args.layers} layers (random, "
          f"untied), float32, CPU threads: {os.cpu_count()}, median of {args.repeats}")
    for name in commands:
        print(f"  {name:15s} {med[name]:7.1f} s   peak RSS {peak[name]:6.0f} MiB")
    print(f"  speed-up localeval bs16 vs lm-eval bs1: {med['lm-eval bs1'] / med['localeval bs16']:.2f}x")
    print(f"  speed-up localeval bs16 vs localeval bs1: "
          f"{med['localeval bs1'] / med['localeval bs16']:.2f}x")
    print(f"  speed-up localeval bs1 vs lm-eval bs1: {med['lm-eval bs1'] / med['localeval bs1']:.2f}x")
    for name, t in (("bs16", timing16), ("bs1", timing1)):
        print(f"  localeval {name}: decode steps {t.get('decode_steps')}, tokens forwarded "
              f"{t['forwarded_tokens']}, padding {t['padding_tokens']}, prompt tokens "
              f"{t['prompt_tokens']}")
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model)
    trie = trie_tokens([tok(prompt)["input_ids"] for prompt, _ in batched.values()])
    for name, t in (("bs16", timing16), ("bs1", timing1)):
        prompt_forwarded = t["forwarded_tokens"] - t.get("decode_tokens", 0)
        print(f"  localeval {name}: prompt tokens forwarded {prompt_forwarded} vs unique "
              f"(the prompts' token trie) {trie}: {prompt_forwarded / trie:.3f}x; decode "
              f"tokens {t.get('decode_tokens')} (each forwarded once, none shared)")
    print(f"  prompts identical to lm-eval's: {same_prompts}/{n}")
    for label, (a, b) in (("localeval bs16 vs bs1", (batched, single)),
                          ("localeval bs16 vs lm-eval bs1", (batched, peer)),
                          ("localeval bs1 vs lm-eval bs1", (single, peer))):
        same, differ = agreement(a, b)
        print(f"  identical generated texts, {label}: {same}/{n}")
        for q, at, la, lb in differ[:5]:
            print(f"    differs: {q!r} first at char {at} (lengths {la} vs {lb})")


if __name__ == "__main__":
    main()
