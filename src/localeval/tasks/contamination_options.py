"""The options of ``localeval contamination`` (TMLU §5.1), declared once: the command line's
flags and ``evaluate``'s documentation come from them. Apart from :mod:`.contamination` so that
building the command line imports no task machinery (pydantic)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ..errors import LocalevalError
from .options import TaskOptions, option

DEFAULT_K = (5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0)  # floats, as --k parses them
# Min-K% Prob as a mean log-prob (<= 0; Min-K%++'s code) or its negation (detect-pretrain-code,
# the TMLU paper)
MinKSign = Literal["log-prob", "negated"]
# How many tokens a k takes: ⌊k% · n⌋ but at least 1 (ours), or ⌊k% · n⌋ alone (both
# reference codes: a text with fewer than 100/k tokens has no score at that k)
KTokens = Literal["at-least-1", "floor"]


@dataclass(frozen=True)
class ContaminationOptions(TaskOptions):
    """Contamination (localeval contamination)."""

    kind = "contamination"

    data: Sequence[str] = option(
        (), "a built-in or local multiple-choice dataset (question + options, one per line as "
        "'A. …'), or a JSONL/CSV of id + text; repeat for each dataset to compare",
        action="append")
    k: Sequence[float] = option(DEFAULT_K, "percentages of lowest-probability tokens, "
                                "comma-separated")
    sample: int | None = option(None, "texts drawn per dataset (the paper: 2000)", type=int)
    seed: int = option(0, "seed of --sample", type=int)
    drop_longest: float = option(0.0, "drop this share of the longest texts within each "
                                 "subject (the paper's length filter; it gives no share: "
                                 "default 0, off)", type=float, metavar="SHARE")
    min_k_sign: MinKSign = option(
        "log-prob", "Min-K% Prob as the mean log-prob of the k% lowest (log-prob, <= 0: "
        "Min-K%++'s code) or its negation (negated: detect-pretrain-code src/run.py and the "
        "TMLU paper)")
    k_tokens: KTokens = option(
        "at-least-1", "tokens a k averages: at-least-1 (⌊k% · n⌋, at least one) or floor "
        "(⌊k% · n⌋ alone, as both reference codes: a text with fewer than 100/k tokens has no "
        "score at that k, left out of its summary)")
    members: str | None = option(None, "CSV/JSONL of id, member (1/0) and optional source: "
                                 "ROC-AUC of each score")
    dataset_revision: str | None = option(None, "dataset revision on the Hub")

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.data:
            raise LocalevalError("contamination needs at least one --data source")
        if not 0 <= self.drop_longest < 1:
            raise LocalevalError(f"--drop-longest must be a share in [0, 1), not "
                                 f"{self.drop_longest}")
        if any(not 0 < x <= 100 for x in self.k):
            raise LocalevalError(f"--k values must be percentages in (0, 100], not "
                                 f"{list(self.k)}")
        if self.sample is not None and self.sample < 1:
            raise LocalevalError(f"--sample must be positive, not {self.sample}")
