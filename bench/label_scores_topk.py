"""How much IRIS's top-k reading of label scores moves PR-AUC (issue 34 item 2), on simulated
verdict-position distributions shaped like a real guard's.

    python bench/label_scores_topk.py [--items 2000] [--seeds 20]

IRIS ``guard_models/base.py`` ``GuardLLM.complete`` keeps the top 2 log-probs of the verdict
position and renormalises the labels among them: a label beaten by another token scores 0 and
the other label 1; with neither among them the item has no label, which ``get_pred_score``
scores 0.0. ``label_scores=full`` renormalises both labels' probabilities over the whole
vocabulary. Per item we draw: the labels' share of the position's probability mass m (a guard
puts nearly all of it on its two labels: Beta(a, 1) with mean a / (a + 1)); P(harmful | the
labels) = sigmoid(z), z ~ N(+mu, 1) for harmful items and N(-mu, 1) for safe ones (mu sets how
good the guard is); and the most likely other token's share of the rest, u ~ U(0.2, 0.9) (a
variant spelling of a label, a newline). A label is among the top 2 when it beats that token.
Prints, per setting, the share of items whose score becomes exactly 0 or 1, those with no
label, and PR-AUC (IRIS's trapezoid) under both rules, mean over seeds.
"""

from __future__ import annotations

import argparse

import numpy as np

from localeval.metrics.classification import pr_auc_trapezoid


def simulate(rng: np.random.Generator, n: int, mu: float, a: float) -> dict[str, float]:
    gold = rng.integers(0, 2, n)
    z = rng.normal(np.where(gold == 1, mu, -mu), 1.0)
    harmful_share = 1 / (1 + np.exp(-z))
    mass = rng.beta(a, 1.0, n)
    p_harmful, p_safe = mass * harmful_share, mass * (1 - harmful_share)
    p_other = (1 - mass) * rng.uniform(0.2, 0.9, n)
    full = p_harmful / (p_harmful + p_safe)
    keep_h, keep_s = p_harmful > p_other, p_safe > p_other  # each label among the top 2
    top = np.where(keep_h & keep_s, full, np.where(keep_h, 1.0, 0.0))  # neither: IRIS's 0.0
    tied = (keep_h ^ keep_s).mean()
    return {"tied": float(tied), "none": float((~keep_h & ~keep_s).mean()),
            "full": pr_auc_trapezoid(gold, full), "top2": pr_auc_trapezoid(gold, top)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()
    print("labels' mass   mu   | tied at 0/1  no label | PR-AUC full  top-2   top-2 - full")
    for a in (1000.0, 100.0, 20.0, 5.0):
        for mu in (0.3, 1.0, 2.0):
            runs = [simulate(np.random.default_rng(seed), args.items, mu, a)
                    for seed in range(args.seeds)]
            m = {k: float(np.mean([r[k] for r in runs])) for k in runs[0]}
            print(f"mean {a / (a + 1):.4f}  {mu:.1f}  |   {m['tied']:6.1%}    {m['none']:6.1%} | "
                  f"{100 * m['full']:7.2f}  {100 * m['top2']:6.2f}   "
                  f"{100 * (m['top2'] - m['full']):+6.2f}")


if __name__ == "__main__":
    main()
