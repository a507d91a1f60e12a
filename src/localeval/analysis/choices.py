"""The analyses' choices and defaults that task options declare, without numpy: the command
line builds its flags from them, and ``localeval --help`` imports no array library."""

from __future__ import annotations

# How an EN cell of Table 2 is computed. "per-country" is the authors': IRIS
# `scripts/get_eval_result.py` (`report_sum_results`) averages the PR-AUC of each country's
# English file (the English versions of one country's cultural items; the General subset has one
# English file). "pooled" computes one PR-AUC over every English item of the subset.
EN_CELLS = ("per-country", "pooled")
PAPER_EN_CELL = "per-country"
N_RESAMPLES = 1000  # bootstrap resamples for the CIs
# What llm_safety.d2_table reproduces: "iris" (the authors' code) or "all" (ours: sensitive rows
# of every subset, failed verdicts left out)
D2_CHOICES = ("iris", "all")
