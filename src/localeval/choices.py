"""The choices the run's options and its records share, each declared once (issue 71): typing
only, so ``localeval --help`` (which builds flags from the options) and the records (which
validate results.json with pydantic) both import them, and neither imports the other's weight.
The metrics' choices' tables and the papers' defaults are in :mod:`localeval.metrics.choices`."""

from __future__ import annotations

from typing import Literal

# Multiple choice (tasks/mcq_options.py; results.json's ``method``): how the answer is read, the
# options' log-probs or a generated text
Method = Literal["likelihood", "generation"]
# How a generated answer becomes a letter: the TMLU code's rules, or our strict ones.
Extract = Literal["tmlu", "strict"]
LmEvalChoices = Literal["fixed", "own"]
# Where generation stops: at the model starting a new question (問題：), or at the budget alone.
StopAt = Literal["question", "budget"]

# LLM safety (tasks/llm_safety_options.py; results.json's ``refusal`` and ``safeguard``): how
# refusals are found
Refusal = Literal["judge", "detector"]
# App. D.2's variants with a safeguard (tasks/llm_safeguarded.py): what the safeguard in front
# does, and which harmful responses are refined
SafeguardMode = Literal["fixed-answer", "advance-inform"]
Refine = Literal["none", "iris", "all"]
# How a three-label guard's verdict (Safe / Sensitive / Harmful) is read in D.2: "argmax" the
# label of highest probability (IRIS get_pred_label, get_safeguard_label), "score" (ours)
# P(harmful) > 0.5, the sensitive share counted as its label policy says
D2Verdict = Literal["argmax", "score"]

# The metrics' choices (metrics/choices.py: each one's names and the papers' default, with why):
# the sweep's thresholds, when a score at t counts as harmful, the PR-AUC estimator, a file of
# one class, each file's value before a cell's mean
ThresholdGrid = Literal["iris", "decimal"]
ThresholdRule = Literal["gt", "ge"]
Auprc = Literal["trapezoid", "ap"]
OneClass = Literal["iris", "left-out"]
FileRounding = Literal["none", "iris"]
