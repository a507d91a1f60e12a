"""``localeval diversity``: how diverse is a dataset, and do its groups (subsets, countries,
languages) form their own clusters? SEA-SafeguardBench Fig. 3 (§2.5) embeds every English
sample with multilingual-e5-large-instruct and draws a t-SNE map coloured by subset and
country, with each group's centroid.

Here: sentence embeddings (any ``st:`` embedder; the default works offline), a t-SNE map
(scikit-learn; cosine metric, PCA start, a fixed seed, so the same input gives the same map)
with each group's centroid marked, and two numbers per group that do not depend on t-SNE's
layout: the cosine distance between group centroids (each centroid the mean of its
unit-length embeddings) and each group's spread (the mean cosine distance of its texts to
its centroid). Written as PNG, SVG, JSON and CSV.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..backends.config import DEFAULT_EMBEDDER, BackendConfig
from ..errors import LocalevalError
from ..records import finite
from ..store.embed_cache import new_counts
from ..store.files import write_bytes_whole, write_text_whole, writing_whole
from .texts import (
    TextRows,
    embed_texts,
    non_english_languages,
    read_texts,
    warn_if_english_embedder,
)


def centroid_distances(x: np.ndarray, groups: Sequence[str]) -> tuple[list[str], np.ndarray,
                                                                      dict[str, float]]:
    """(group names sorted, the cosine-distance matrix of their centroids, each group's
    spread). Rows of ``x`` are normalised to unit length first."""
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    labels = np.asarray(groups)
    names = sorted(set(labels.tolist()))
    centroids = np.array([unit[labels == g].mean(axis=0) for g in names])
    normed = centroids / np.linalg.norm(centroids, axis=1, keepdims=True)
    distances = np.clip(1 - normed @ normed.T, 0, 2)
    np.fill_diagonal(distances, 0)
    spread = {g: float(np.mean(1 - unit[labels == g] @ normed[i])) for i, g in enumerate(names)}
    return names, distances, spread


def tsne(x: np.ndarray, perplexity: float, seed: int) -> np.ndarray:
    from sklearn.manifold import TSNE

    if len(x) < 5:
        raise LocalevalError("a diversity map needs at least 5 texts")
    perplexity = min(perplexity, (len(x) - 1) / 3)  # t-SNE needs perplexity < n
    points: np.ndarray = TSNE(n_components=2, perplexity=perplexity, metric="cosine",
                              init="pca", random_state=seed).fit_transform(x)  # sklearn: untyped
    return points


def diversity_map(data: str | Path, output: str | Path, *, by: str = "lang",
                  text_column: str | None = None, where: dict[str, str] | None = None,
                  embedder: str = DEFAULT_EMBEDDER, perplexity: float = 30.0, seed: int = 0,
                  cache: str | Path | None = None, quiet: bool = False,
                  embedder_options: BackendConfig | dict[str, Any] | None = None,
                  shared_cache: bool = True) -> dict[str, Any]:
    """Embed the texts of ``data`` (the rows matching every ``where`` column=value), map them
    with t-SNE coloured by column ``by``, and write diversity.{png,svg,json}, points.csv and
    centroid_distances.csv into folder ``output``. Returns what diversity.json holds.
    Embeddings are read back from ``cache`` and (``shared_cache``) the embedding cache the
    embedding commands share; ``embedding_cache`` says how many were."""
    rows = read_texts(data, text_column, [by, *(where or {})])
    keep = [i for i, r in enumerate(rows.rows)
            if all(str(r.get(k, "")).strip() == v for k, v in (where or {}).items())]
    if not keep:
        raise LocalevalError(f"{rows.path}: no row matches {where}")
    texts = [rows.texts[i] for i in keep]
    groups = [rows.column(by)[i] or "(none)" for i in keep]
    warning = warn_if_english_embedder(embedder, non_english_languages(rows, keep))
    hits = new_counts()  # read back from a cache, of those embedded
    x, identity = embed_texts(texts, embedder, cache=cache, quiet=quiet,
                              config=BackendConfig.of(embedder_options),
                              shared_cache=shared_cache, counts=hits)
    names, distances, spread = centroid_distances(x, groups)
    points = tsne(x, perplexity, seed)
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    summary = {
        "data": str(rows.path), "by": by, "where": where or {}, "embedder": embedder,
        "embedder_identity": identity, "n_texts": len(texts), "embedding_cache": hits,
        "groups": {g: {"n": groups.count(g), "spread": spread[g]} for g in names},
        "centroid_distance": {a: {b: float(distances[i, j]) for j, b in enumerate(names)}
                              for i, a in enumerate(names)},
        "tsne": {"perplexity": min(perplexity, (len(x) - 1) / 3), "metric": "cosine",
                 "init": "pca", "seed": seed},
        "files": ["diversity.png", "diversity.svg", "points.csv", "centroid_distances.csv"],
        "warnings": [warning] if warning else [],
    }
    _write_points(out / "points.csv", rows, keep, groups, points, by)
    _write_matrix(out / "centroid_distances.csv", names, distances)
    _plot(out, points, groups, names, f"{Path(data).name}: t-SNE of {len(texts)} texts by {by}")
    write_text_whole(out / "diversity.json", json.dumps(finite(summary), indent=1,
                                                        ensure_ascii=False) + "\n")
    return summary


def _write_points(path: Path, rows: TextRows, keep: list[int], groups: list[str], points: np.ndarray,
                  by: str) -> None:
    ids = [str(rows.rows[i].get("id", rows.numbers[i])) for i in keep]
    with writing_whole(path) as f:
        w = csv.writer(f)
        w.writerow(["id", by, "x", "y"])
        w.writerows([i, g, f"{p[0]:.4f}", f"{p[1]:.4f}"] for i, g, p in zip(ids, groups, points,
                                                                             strict=True))


def _write_matrix(path: Path, names: list[str], distances: np.ndarray) -> None:
    with writing_whole(path) as f:
        w = csv.writer(f)
        w.writerow(["", *names])
        w.writerows([a, *(f"{d:.4f}" for d in distances[i])] for i, a in enumerate(names))


def _plot(out: Path, points: np.ndarray, groups: list[str], names: list[str],
          title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on servers
    import matplotlib.pyplot as plt

    labels = np.asarray(groups)
    colours = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    fig, ax = plt.subplots(figsize=(8, 6.5), dpi=150)
    for i, g in enumerate(names):
        mine = points[labels == g]
        colour = colours(i % colours.N)
        ax.scatter(mine[:, 0], mine[:, 1], s=8, alpha=0.55, color=colour,
                   label=f"{g} ({len(mine)})")
        cx, cy = mine.mean(axis=0)
        ax.scatter([cx], [cy], s=160, marker="X", color=colour, edgecolor="black", linewidth=1)
        ax.annotate(g, (cx, cy), xytext=(6, 6), textcoords="offset points", fontsize=10,
                    weight="bold")
    ax.set_title(title, fontsize=11)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.legend(fontsize=8, markerscale=2, loc="best", title="× centroid")
    fig.tight_layout()
    for suffix in ("png", "svg"):
        image = io.BytesIO()  # never written through a link (store/files.py)
        fig.savefig(image, format=suffix, metadata={"Date": None} if suffix == "svg" else None)
        write_bytes_whole(out / f"diversity.{suffix}", image.getvalue())
    plt.close(fig)
