"""The run folder's ``batches.json``: the provider batches (``--batch``) a run has submitted and
not yet read back, so a killed run re-attaches to the batch in flight instead of submitting
it again. Written whole (:mod:`.files`: never through a link) as soon as a batch is created.

What it holds comes from a file, so it is checked where it is read: anything but the shape
below is one :class:`BatchLedgerError` naming the file and the field.

    {"batches": [{"id": "batch_abc", "endpoint": "/v1/completions",
                  "custom_ids": ["…", …]}, …]}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import LocalevalError
from .files import write_text_whole

if TYPE_CHECKING:
    from ..backends.openai_batch import Submitted

NAME = "batches.json"


class BatchLedgerError(LocalevalError):
    """batches.json is not what this module writes."""


class BatchLedger:
    def __init__(self, folder: Path):
        self.path = Path(folder) / NAME

    def load(self) -> list[Submitted]:
        if not self.path.exists():
            return []
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise BatchLedgerError(f"{self.path}: not readable JSON ({e}); remove it to "
                                   "submit the missing requests again") from None
        batches = data.get("batches") if isinstance(data, dict) else None
        if not isinstance(batches, list):
            raise BatchLedgerError(f"{self.path}: field 'batches' is not a list")
        for k, b in enumerate(batches):
            problem = _entry_problem(b)
            if problem:
                raise BatchLedgerError(f"{self.path}: batches[{k}].{problem}")
        return batches

    def save(self, batches: list[Submitted]) -> None:
        if not batches and not self.path.exists():
            return
        write_text_whole(self.path, json.dumps({"batches": batches}, indent=1) + "\n")


def _entry_problem(entry: object) -> str | None:
    if not isinstance(entry, dict):
        return "entry is not an object"
    for key in ("id", "endpoint"):
        if not isinstance(entry.get(key), str) or not entry[key]:
            return f"{key} is not a non-empty string"
    ids = entry.get("custom_ids")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        return "custom_ids is not a list of strings"
    return None
