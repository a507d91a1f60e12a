"""Texts for the dataset tools: rows of a CSV/JSONL/Parquet file with a text column, and their
sentence embeddings through the request cache (the same cache and progress bar as a run) and
the embedding cache the embedding commands share (:mod:`..store.embed_cache`)."""

from __future__ import annotations

import sys
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..backends.base import Embed, Embedding, error_of
from ..backends.config import BackendConfig
from ..data.rows import read_rows
from ..errors import DataError
from ..run import load_model
from ..store.embed_cache import SharedEmbeddings, say_hits
from ..store.executor import CachedExecutor, open_cache

TEXT_COLUMNS = ("text", "prompt")  # the text column when none is named, first found
# SEA-SafeguardBench's diversity map embeds with multilingual-e5-large-instruct (§2.5).
PAPER_EMBEDDER = "st:intfloat/multilingual-e5-large-instruct"
# Words in a model name that say it was trained on many languages (multilingual-e5, LaBSE,
# paraphrase-multilingual-*, XLM-R, BGE-M3, …); other names are taken as English-only, as the
# default all-MiniLM-L6-v2 is.
MULTILINGUAL_MARKS = ("multilingual", "labse", "xlm", "bge-m3", "muse", "laser",
                      "qwen3-embedding", "jina-embeddings-v3", "gte-multilingual")
ENGLISH = {"en", "eng", "english"}


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
                quiet: bool = False, config: BackendConfig | None = None,
                shared_cache: bool = True,
                counts: dict[str, int] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
    """(one row per text, the embedder's identity). The embedder (role ``embedder``, with
    ``config``: device, batch size) is checked before it loads; embeddings already in
    ``cache`` or (``shared_cache``) the embedding cache the embedding commands share
    (:mod:`..store.embed_cache`) are read back; the rest are computed and stored in both.
    Says "embeddings: N of M from the cache" unless ``quiet``, and adds M and N to ``counts``
    (``embeddings``, ``embeddings_cached``: distinct texts)."""
    with load_model(embedder, config, "embedder", "--embedder") as backend, \
            open_cache(cache) as store, \
            SharedEmbeddings.default(shared_cache, cache) as shared:
        execute = CachedExecutor(backend, store, quiet, "texts", embeddings=shared)
        responses = execute([Embed(t) for t in texts])
    say_hits(execute.embedded, quiet)
    if counts is not None:
        for key, n in execute.embedded.items():
            counts[key] = counts.get(key, 0) + n
    vectors = [r.embedding for r in responses if isinstance(r, Embedding)]
    if len(vectors) < len(responses):
        first = next(error_of(r) for r in responses if not isinstance(r, Embedding))
        raise RuntimeError(f"{len(responses) - len(vectors)} texts got no embedding: {first}")
    return np.array(vectors, dtype=np.float64), backend.identity


def non_english_languages(rows: TextRows, keep: Sequence[int] | None = None,
                          lang_column: str = "lang") -> list[str]:
    """The languages other than English among the rows (those at ``keep``, default all): the
    ``lang_column`` values, or without that column "non-Latin script" when some text is mostly
    letters outside the Latin script (Thai, Korean, Chinese, Arabic, Bengali …)."""
    keep = range(len(rows.rows)) if keep is None else keep
    if rows.rows and lang_column in rows.rows[0]:
        values = rows.column(lang_column)
        return sorted({values[i] for i in keep if values[i] and values[i].lower() not in ENGLISH})
    texts = rows.texts
    return ["non-Latin script"] if any(_mostly_non_latin(texts[i]) for i in keep) else []


def _mostly_non_latin(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    other = sum(1 for c in letters if not unicodedata.name(c, "").startswith("LATIN"))
    return bool(letters) and other > len(letters) / 2


def warn_if_english_embedder(embedder: str, langs: Sequence[str]) -> str | None:
    """One warning line (on stderr, and returned for the output file) when ``embedder`` is not
    known to be multilingual and the texts are not all English: an English-only embedder maps
    Thai or Korean text by its sub-word pieces, so distances and scores in those languages
    measure little. None when there is nothing to say."""
    if not langs or any(mark in embedder.lower() for mark in MULTILINGUAL_MARKS):
        return None
    shown = ", ".join(langs[:8]) + (f" (+{len(langs) - 8} more)" if len(langs) > 8 else "")
    warning = (f"embedder {embedder} is not known to be multilingual, but the texts include "
               f"{shown}: its embeddings of them mean little; SEA-SafeguardBench used "
               f"{PAPER_EMBEDDER} (--embedder)")
    print(f"warning: {warning}", file=sys.stderr)
    return warning
