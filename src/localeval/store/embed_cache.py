"""The embedding cache that ``diversity``, ``train-guard`` and ``run --guard embedding:…`` share
(issue 53 item 3): each embeds the same texts, so a text embedded by one is read back by the
others. It is a request cache (:class:`.cache.RequestCache`, keyed by the embedder's identity
and the text) that :class:`.executor.CachedExecutor` consults for ``Embed`` requests after the
command's own cache, and stores every new embedding in.

Where: ``$LOCALEVAL_EMBED_CACHE`` (a file; ``off`` keeps none), else
``$XDG_CACHE_HOME/localeval/embeddings.sqlite`` (``~/.cache`` when XDG_CACHE_HOME is unset).
``--no-cache`` keeps none either. The file is opened when the first embedding is asked for, so
a run without embeddings never touches it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from .cache import CacheError, RequestCache

ENV = "LOCALEVAL_EMBED_CACHE"
OFF = ("off", "none", "0", "no")


def embedding_cache_path() -> Path | None:
    """The shared embedding cache's file, or None (``$LOCALEVAL_EMBED_CACHE=off``)."""
    target = os.environ.get(ENV, "").strip()
    if target.lower() in OFF:
        return None
    if target:
        return Path(target).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "localeval" / "embeddings.sqlite"


class SharedEmbeddings:
    """The shared embedding cache, opened on first use (:meth:`get`) and closed on exit. None
    where there is none (off, or the same file as the command's own cache: read there)."""

    def __init__(self, path: Path | None, own: str | Path | None = None):
        self.path = path
        if path is not None and own is not None and _same(path, Path(own)):
            self.path = None
        self.cache: RequestCache | None = None

    @classmethod
    def default(cls, enabled: bool = True, own: str | Path | None = None) -> SharedEmbeddings:
        return cls(embedding_cache_path() if enabled else None, own)

    def get(self) -> RequestCache | None:
        if self.cache is None and self.path is not None:
            try:
                self.cache = RequestCache(self.path)
            except CacheError as e:
                raise CacheError(f"{e} (the shared embedding cache: set ${ENV} to another "
                                 "file, or to off)") from None
        return self.cache

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
            self.cache = None

    def __enter__(self) -> SharedEmbeddings:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def new_counts() -> dict[str, int]:
    """Embeddings asked for (distinct per call) and those read back from a cache."""
    return {"embeddings": 0, "embeddings_cached": 0}


def hit_line(counts: Mapping[str, int]) -> str:
    return (f"embeddings: {counts.get('embeddings_cached', 0)} of {counts.get('embeddings', 0)} "
            "from the cache")


def say_hits(counts: Mapping[str, int], quiet: bool) -> None:
    """The one line each embedding command prints (stderr), when it embedded anything."""
    if counts.get("embeddings") and not quiet:
        print(hit_line(counts), file=sys.stderr)
