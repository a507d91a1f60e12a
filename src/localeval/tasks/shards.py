"""``--shard I/N`` (issue 66): a run of a content-keyed share of its items, so that N machines
(a Slurm array, a Kubernetes Indexed Job) each run one share and ``localeval merge`` makes the
one run they add up to.

An item's shard is a hash of its id mod N, never its position: the same data set and N give the
same shares on any machine and in any order, and every item is in exactly one. Only the scored
units are shared out (a multiple-choice run's few-shot examples stay whole), and a sample
stays with its item: its language versions, draws and option orders are in one shard.

Light (``localeval --help`` may import it)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from ..errors import LocalevalError

SHARD = "shard"  # config.json's key: "I/N", only in a shard's folder


@dataclass(frozen=True)
class Shard:
    """Share ``index`` of ``count`` (0 <= index < count)."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"I/N"`` (as ``--shard`` and config.json give it), or one line saying what it takes."""
        match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
        if not match or not 0 <= int(match[1]) < int(match[2]):
            raise LocalevalError(f"--shard {text}: give I/N with 0 <= I < N and N >= 1 (0/4 "
                                 "is the first of four; $SLURM_ARRAY_TASK_ID/"
                                 "$SLURM_ARRAY_TASK_COUNT)")
        return cls(int(match[1]), int(match[2]))

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, key: str) -> bool:
        """Whether the item of id ``key`` is in this shard."""
        return shard_of(key, self.count) == self.index


def shard_of(key: str, count: int) -> int:
    """The shard of the item of id ``key`` among ``count``: sha256 of the id, mod ``count``."""
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") % count
