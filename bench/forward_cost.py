"""Time per forwarded token: localeval's prefix-tree scoring against a bare transformers forward
of the same questions' whole prompts (what lm-eval forwards), in one process, alternating, so a
busy machine slows both alike. Also the tokens each forwards against the unique-token count
(the prompts' token trie: every distinct prefix once).

The model is a seeded random Llama around the shared SmolLM2 tokenizer (issue 39: 6 layers,
hidden 384); the questions are CMMLU's, 5-shot, lm-eval's prompt format, float32 on CPU, eager
attention on both sides. localeval's side is ``evaluate()`` with the backend already loaded
(planning, the tree's forward passes, scoring); the bare side is one ``model(ids)`` per prompt.

    python bench/forward_cost.py --subjects sociology --limit 40 --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from tiny_models import SHARED, make_model  # noqa: E402
from whole_process import trie_tokens  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subjects", default="sociology")
    ap.add_argument("--limit", type=int, default=40, help="questions per subject")
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--hidden", type=int, default=384)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--work", default=str(HERE / "out" / "forward_cost"))
    args = ap.parse_args()
    import torch

    from localeval import evaluate
    from localeval.backends.hf import HFBackend

    model = make_model(Path(args.work) / f"llama-{args.layers}x{args.hidden}",
                       layers=args.layers, hidden=args.hidden, chat=False)
    backend = HFBackend(str(model), dtype="float32", device="cpu")
    tok = backend.tokenizer

    def ours() -> tuple[float, int, list[str]]:
        for key in backend.stats:
            backend.stats[key] = 0
        start = time.perf_counter()
        record = evaluate("cmmlu", backend, data=str(SHARED / "data" / "cmmlu"),
                          subjects=args.subjects, limit=args.limit, shots=5,
                          method="likelihood", prompt_style="lm-eval", quiet=True, store=False)
        return (time.perf_counter() - start, backend.stats["forwarded_tokens"],
                [s["prompt"] for s in record.samples])

    def bare(prompts: list[str]) -> tuple[float, int]:
        rows = [torch.tensor([tok(p)["input_ids"]]) for p in prompts]
        start = time.perf_counter()
        with torch.no_grad():
            for ids in rows:
                backend.model(ids)
        return time.perf_counter() - start, sum(r.shape[1] for r in rows)

    _, _, prompts = ours()  # warm-up, and the prompts
    bare(prompts[:2])
    walls = {"localeval": [], "bare": []}
    for _ in range(args.repeats):
        seconds, forwarded, _ = ours()
        walls["localeval"].append(seconds / forwarded)
        seconds, tokens = bare(prompts)
        walls["bare"].append(seconds / tokens)
    unique = trie_tokens([tok(p)["input_ids"] for p in prompts])
    med = {k: statistics.median(v) for k, v in walls.items()}
    n = len(prompts)
    print(f"{n} questions ({args.subjects}, 5-shot, lm-eval format), Llama {args.layers}x"
          f"{args.hidden}, float32, CPU, median of {args.repeats}, alternating")
    print(f"tokens per question: whole prompts {tokens / n:.1f} (bare, lm-eval), localeval "
          f"forwarded {forwarded / n:.1f}, unique (token trie) {unique / n:.1f}; localeval / "
          f"unique = {forwarded / unique:.3f}")
    print(f"µs per forwarded token: localeval {1e6 * med['localeval']:.1f} (its whole "
          f"evaluate: planning, tree, scoring)   bare forward {1e6 * med['bare']:.1f}   ratio "
          f"{med['localeval'] / med['bare']:.2f}")
    print(f"whole-question time: localeval {med['localeval'] * forwarded:.2f} s   bare "
          f"{med['bare'] * tokens:.2f} s   ({med['bare'] * tokens / (med['localeval'] * forwarded):.2f}x)")


if __name__ == "__main__":
    main()
