"""Texts for the dataset tools: rows of a CSV/JSONL/Parquet file with a text column, and their
sentence embeddings through the request cache (the same cache and progress bar as a run)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..backends.base import Embed
from ..backends.config import BackendConfig
from ..data.rows import read_rows
from ..errors import DataError
from ..run import load_model
from ..store.executor import CachedExecutor, open_cache

TEXT_COLUMNS = ("text", "prompt")  # the text column when none is named, first found


@dataclass
class TextRows:
    path: Path
    text_column: str
    numbers: list[int]  # each row's number in the file (for messages)
    rows: list[dict[str, Any]]

    @property
    def texts(self) -> list[str]:
        return [str(r[self.text_column]) for r in self.rows]

    def column(self, name: str) -> list[str]:
        return [str(r.get(name, "")).strip() for r in self.rows]


def read_texts(path: str | Path, text_column: str | None = None,
               required: Sequence[str] = ()) -> TextRows:
    """The file's rows; the text column (named, or the first of :data:`TEXT_COLUMNS`) and every
    ``required`` column must exist, and no text may be empty."""
    path = Path(path)
    numbered = list(read_rows(path))
    if not numbered:
        raise DataError(path, None, None, "the file has no rows")
    header = list(numbered[0][1])
    column = text_column or next((c for c in TEXT_COLUMNS if c in header), TEXT_COLUMNS[0])
    for name in (column, *required):
        if name not in header:
            raise DataError(path, None, name, f"no such column; the file has: {', '.join(header)}")
    for number, row in numbered:
        if not str(row.get(column) or "").strip():
            raise DataError(path, number, column, "empty text")
    return TextRows(path, column, [n for n, _ in numbered], [r for _, r in numbered])


def embed_texts(texts: Sequence[str], embedder: str, *, cache: str | Path | None = None,
                quiet: bool = False,
                config: BackendConfig | None = None) -> tuple[np.ndarray, dict]:
    """(one row per text, the embedder's identity). The embedder (role ``embedder``, with
    ``config``: device, batch size) is checked before it loads; embeddings already in
    ``cache`` are read back; the rest are computed and stored."""
    backend = load_model(embedder, config, "embedder")
    with open_cache(cache) as store:
        responses = CachedExecutor(backend, store, quiet, "texts")([Embed(t) for t in texts])
    failed = [i for i, r in enumerate(responses) if r.embedding is None]
    if failed:
        raise RuntimeError(f"{len(failed)} texts got no embedding: {responses[failed[0]].error}")
    return np.array([r.embedding for r in responses], dtype=np.float64), backend.identity
