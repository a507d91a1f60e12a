"""lm-evaluation-harness's own model backend (``hf`` or ``vllm``) scoring given likelihood
requests, as a process of its own: what bench/gpu.py runs where lm-eval is installed without
the dependencies of its task pipeline (``datasets`` and its ``pyarrow`` alone are over the
64 MiB a device run may carry: ``gpu.py --make-wheels DIR --lean``).

The requests are lm-eval's for the workload: per question, its 5-shot context and the four
continuations `` A`` … `` D`` (the cmmlu task's choices after its target delimiter, a space).
The contexts are read from localeval's run of the same workload with ``--prompt-style
lm-eval`` (its samples' ``prompt``); tests/test_gpu_bench.py checks they equal, string for
string, the contexts lm-eval's CLI logs for that workload. What is timed is lm-eval's model
class (its tokenisation, batching, reordering and forward passes: ``HFLM.loglikelihood`` /
``VLLM.loglikelihood``), not its task loading or metrics.

    python bench/lm_eval_engine.py --engine hf --model DIR --requests R.jsonl --out O.jsonl \
        --model-args dtype=bfloat16 --device cuda --batch-size auto
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

CHOICES = (" A", " B", " C", " D")  # lm-eval cmmlu's doc_to_choice after target_delimiter " "


def requests_from_samples(samples: Path, out: Path) -> int:
    """The requests file of a localeval run's samples.jsonl (lm-eval prompt style)."""
    rows = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines()]
    with open(out, "w", encoding="utf-8") as f:
        for s in rows:
            f.write(json.dumps({"id": s["id"], "context": s["prompt"]}, ensure_ascii=False) + "\n")
    return len(rows)


def model_of(engine: str, model: str, model_args: str, device: str, batch_size: str):
    args = dict(pair.split("=", 1) for pair in model_args.split(",") if pair)
    if engine == "hf":
        from lm_eval.models.huggingface import HFLM

        return HFLM(pretrained=model, device=device, batch_size=batch_size, **args)
    from lm_eval.models.vllm_causallms import VLLM

    return VLLM(pretrained=model, batch_size=batch_size, **args)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", choices=("hf", "vllm"), required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--model-args", default="")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batch-size", default="auto")
    ap.add_argument("--requests", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    from lm_eval.api.instance import Instance

    questions = [json.loads(line) for line in
                 args.requests.read_text(encoding="utf-8").splitlines()]
    instances = [Instance(request_type="loglikelihood", doc=q, arguments=(q["context"], c),
                          idx=i) for q in questions for i, c in enumerate(CHOICES)]
    lm = model_of(args.engine, args.model, args.model_args, args.device, args.batch_size)
    scores = [logprob for logprob, _greedy in lm.loglikelihood(instances)]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        for n, q in enumerate(questions):
            f.write(json.dumps({"id": q["id"], "logprobs": scores[4 * n: 4 * n + 4]}) + "\n")


if __name__ == "__main__":
    main()
