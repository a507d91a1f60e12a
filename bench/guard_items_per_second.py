"""Guard prompt classification: items/s with prefix reuse on vs off, side by side in one run.

The model is a seeded random Llama of SmolLM2-135M's shape at reduced depth (4 layers) around
the real SmolLM2 tokenizer from ../shared. The items are XSTest's 450 prompts; the guard's
requests form a prefix tree (the template's preamble, each item, then each policy or stage),
which prefix reuse forwards node by node, each shared prefix once. The two backends warm up on
four items, then alternate over several repetitions and the medians are compared. Scores must
agree.

Also printed: the prompt tokens forwarded with reuse on, against the unique-token bound (every
distinct token prefix of all the requests' prompts forwarded once: the node count of their
token trie), and for generation stages the decode steps. ``--classify response`` judges the
XSTest model completions (two-stage guards such as WildGuard generate first);
``--option mode=per-policy`` passes a guard option (ShieldGemma's per-policy prompts).

    python bench/guard_items_per_second.py --guard llamaguard3 --limit 200 --repeats 3
    python bench/guard_items_per_second.py --guard shieldgemma --option mode=per-policy
    python bench/guard_items_per_second.py --guard wildguard --classify response --limit 24
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from tiny_models import SHARED, make_model  # noqa: E402

from localeval.backends.hf import HFBackend  # noqa: E402
from localeval.guards import get_guard  # noqa: E402
from localeval.tasks import safeguard  # noqa: E402
from localeval.tasks.safety_items import load_safety_items  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--guard", default="llamaguard3")
    ap.add_argument("--limit", type=int, default=200, help="XSTest prompts (max 450)")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--classify", default="prompt", choices=["prompt", "response"])
    ap.add_argument("--option", action="append", default=[], help="guard option key=value")
    args = ap.parse_args()

    folder = Path(tempfile.gettempdir()) / f"localeval-bench-smollm2-{args.layers}l"
    model = make_model(folder, arch="smollm2-135m", layers=args.layers)
    if args.classify == "prompt":
        items = load_safety_items("safety-prompts",
                                  SHARED / "data" / "xstest" / "xstest_prompts.csv",
                                  limit=args.limit)
    else:
        items = load_safety_items("safety-responses",
                                  SHARED / "data" / "xstest" / "model_completions",
                                  limit=args.limit)
    guard = get_guard(args.guard, **dict(o.split("=", 1) for o in args.option))
    planned = safeguard.plan(items, [args.classify], guard)
    backends = {"reuse on": HFBackend(str(model), device=args.device, prefix_reuse=True),
                "reuse off": HFBackend(str(model), device=args.device, prefix_reuse=False)}
    for backend in backends.values():  # load the weights and warm the kernels up, both alike
        guard.classify([p.conversation() for p in planned[:4]], backend.run)
        backend.stats = dict.fromkeys(backend.stats, 0)
    times: dict[str, list[float]] = {name: [] for name in backends}
    scores: dict[str, list] = {}
    texts: dict[str, list] = {}  # generated texts (two-stage guards' first stage)
    sent: list = []  # every request of one pass, for the unique-token bound
    for rep in range(args.repeats):
        for name, backend in backends.items():
            def execute(requests, backend=backend, record=rep == 0 and name == "reuse on"):
                if record:
                    sent.extend(requests)
                return backend.run(requests)

            start = time.perf_counter()
            verdicts = guard.classify([p.conversation() for p in planned], execute)
            times[name].append(time.perf_counter() - start)
            scores[name] = [v.score for v in verdicts]
            texts[name] = [[r.get("text") for r in v.raw or []] for v in verdicts]
    pairs = list(zip(scores["reuse on"], scores["reuse off"], strict=True))
    diff = max((abs(a - b) for a, b in pairs if a is not None and b is not None), default=0.0)
    unscored = sum(a is None for a, _ in pairs)
    same_none = all((a is None) == (b is None) for a, b in pairs)
    same_texts = sum(a == b for a, b in zip(texts["reuse on"], texts["reuse off"]))
    rate = {name: len(planned) / statistics.median(t) for name, t in times.items()}
    print(f"guard {guard.name}, {len(planned)} XSTest {args.classify}s, SmolLM2-135M shape at "
          f"{args.layers} layers (random), {args.device}, median of {args.repeats} runs")
    for name in backends:
        print(f"  prefix {name:9s}: {rate[name]:8.1f} items/s "
              f"(median {statistics.median(times[name]):.2f} s)")
    print(f"  ratio on/off  : {rate['reuse on'] / rate['reuse off']:.2f}x")
    print(f"  max |score difference| on vs off: {diff:.2e}; items without a score: {unscored} "
          f"({'the same' if same_none else 'NOT the same'} items both ways); identical "
          f"generated texts on vs off: {same_texts}/{len(pairs)}")
    tokens(backends["reuse on"], sent, args.repeats)


def tokens(backend: HFBackend, requests: list, repeats: int) -> None:
    """Prompt tokens forwarded per pass against the unique-token bound."""
    from localeval.backends.base import ScoreNext

    seqs = sorted(tuple(backend._score_tokens(r)[0] if isinstance(r, ScoreNext)
                        else backend.encode(*backend.render(r.prompt))) for r in requests)
    bound = sum(len(b) - len(os.path.commonprefix([a, b])) for a, b in zip([()] + seqs, seqs))
    stats = {k: v / repeats for k, v in backend.stats.items()}
    forwarded = stats["forwarded_tokens"] - stats.get("decode_tokens", 0)
    print(f"  requests per pass: {len(requests)}, prompt tokens {stats['prompt_tokens']:.0f}; "
          f"forwarded (prompts) {forwarded:.0f}, unique-token bound {bound} "
          f"-> bound / forwarded = {bound / forwarded:.3f}; padding {stats['padding_tokens']:.0f}")
    if stats.get("decode_steps"):
        print(f"  generation: decode steps {stats['decode_steps']:.0f} for "
              f"{stats['decode_tokens']:.0f} decoded tokens")


if __name__ == "__main__":
    main()
