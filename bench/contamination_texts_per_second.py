"""Min-K% / Min-K%++ token log-probs: texts/s of localeval's batched ``TextLogprobs`` against a
plain one-text-at-a-time loop (what the Min-K%++ reference code, zjysteven/mink-plus-plus
``run.py``, does: one forward pass per text, log-softmax, the distribution's moments), side by
side in one run on the same model and texts. The values must agree. Both compute full
next-token distributions at every position; on a small model on CPU the LM head's
tokens x vocabulary product dominates, which batching cannot shrink.

The model is a seeded random Llama of SmolLM2-135M's shape at reduced depth around the real
SmolLM2 tokenizer; the texts are TMMLU+ sample and CMMLU questions with their options.

    python bench/contamination_texts_per_second.py --texts 200 --layers 4 --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from tiny_models import SHARED, make_model  # noqa: E402

from localeval.backends.base import TextLogprobs  # noqa: E402
from localeval.backends.hf import HFBackend  # noqa: E402
from localeval.tasks.contamination import ContaminationTask  # noqa: E402


def plain_loop(model, tokenizer, texts: list[str], device: str) -> list[list[float]]:
    import torch

    out = []
    for text in texts:
        ids = torch.tensor([tokenizer(text)["input_ids"]], device=device)
        with torch.no_grad():
            logits = model(ids).logits[0, :-1]
        logp = logits.log_softmax(-1)
        probs = logits.softmax(-1)
        actual = logp.gather(-1, ids[0, 1:].unsqueeze(-1)).squeeze(-1)
        mu = (probs * logp).sum(-1)
        # Two-pass variance, as localeval computes it (the reference's one-pass
        # E[(log p)^2] - mu^2 cancels in float32 when the distribution is peaked).
        sigma = (probs * (logp - mu.unsqueeze(-1)).square()).sum(-1).sqrt()
        out.append(((actual - mu) / sigma).tolist())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texts", type=int, default=200)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()

    import torch
    import transformers

    torch.manual_seed(0)
    folder = Path(tempfile.gettempdir()) / f"localeval-bench-smollm2-{args.layers}l"
    model_dir = make_model(folder, arch="smollm2-135m", layers=args.layers)
    data = [str(SHARED / "data" / "tmmluplus-sample"), str(SHARED / "data" / "cmmlu")]
    texts = [t.text for t in ContaminationTask(data=data, sample=args.texts // 2).load()]
    backend = HFBackend(str(model_dir), device=args.device, dtype="float32")
    model = transformers.AutoModelForCausalLM.from_pretrained(
        model_dir, attn_implementation="eager").to(args.device).eval()
    requests = [TextLogprobs(t) for t in texts]
    times: dict[str, list[float]] = {"localeval": [], "plain loop": []}
    for _ in range(args.repeats):
        start = time.perf_counter()
        ours = backend.run(requests)
        times["localeval"].append(time.perf_counter() - start)
        start = time.perf_counter()
        plain = plain_loop(model, backend.tokenizer, texts, args.device)
        times["plain loop"].append(time.perf_counter() - start)
    # Relative: a random model's next-token distributions are very peaked (sigma ~1e-4), so
    # float32 noise of 1e-5 in a log-prob moves a standardised value (~ -900) by ~0.1.
    diffs = [abs((v - m) / s - p) / max(1.0, abs(p)) for r, row in zip(ours, plain, strict=True)
             for v, m, s, p in zip(r.token_logprobs, r.token_means, r.token_stds, row,
                                   strict=True)]
    rate = {k: len(texts) / statistics.median(v) for k, v in times.items()}
    tokens = sum(len(r.token_logprobs) + 1 for r in ours)
    print(f"{len(texts)} texts ({tokens} tokens), SmolLM2-135M shape at {args.layers} layers "
          f"(random), {args.device}, {torch.get_num_threads()} CPU threads, median of "
          f"{args.repeats} runs")
    for name, r in rate.items():
        print(f"  {name:<11} {r:8.1f} texts/s")
    print(f"  speed-up    {rate['localeval'] / rate['plain loop']:8.2f}x")
    print(f"  max relative difference of the standardised values: {max(diffs):.2e}")


if __name__ == "__main__":
    main()
