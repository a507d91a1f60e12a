"""``localeval train-guard``: a cheap guard of one's own, in the style of LionGuard 2 (Tan et
al. 2025, a SEA-SafeguardBench baseline): a sentence embedding of each text and a
logistic-regression head (scikit-learn), saved as a small JSON file that
``--guard embedding:<file>`` uses in every safeguard task.

Cross-validation answers the question a safety team asks first: how well does it work, and in
which languages? Folds are made by item (``--group-column``, default ``id``), so the
translations of one item never sit on both sides of a split; each fold trains on its training
items in the training languages only (``--train-langs``, default all) and scores its held-out
items in every language. Each text's out-of-fold score then gives PR-AUC per language:
trained on English only, the other languages' figures are the cheap guard's language gap.
The saved head is then fitted on every row in the training languages.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..backends.config import DEFAULT_EMBEDDER, BackendConfig
from ..errors import DataError, LocalevalError
from ..guards.embedding import FORMAT, text_hashes
from ..metrics.classification import average_precision, pr_auc_trapezoid, roc_auc
from ..records import finite
from ..store.embed_cache import new_counts
from ..store.files import write_text_whole
from ..version import __version__
from .texts import (
    TextRows,
    embed_texts,
    non_english_languages,
    read_texts,
    warn_if_english_embedder,
)

HARMFUL = {"harmful", "unsafe", "1", "true", "yes"}
SAFE = {"safe", "0", "false", "no"}
SENSITIVE = ("exclude", "harmful", "safe")  # what a "sensitive" label becomes


def binary_labels(rows: TextRows, column: str, sensitive: str) -> list[int | None]:
    """1 harmful, 0 safe, None left out (sensitive with ``sensitive="exclude"``)."""
    if sensitive not in SENSITIVE:
        raise LocalevalError(f"--sensitive must be one of {', '.join(SENSITIVE)}")
    out: list[int | None] = []
    for number, value in zip(rows.numbers, rows.column(column), strict=True):
        value = value.lower()
        if value == "sensitive":
            value = sensitive
        if value in HARMFUL:
            out.append(1)
        elif value in SAFE:
            out.append(0)
        elif value == "exclude":
            out.append(None)
        else:
            raise DataError(rows.path, number, column, f"label {value!r} is not harmful/unsafe, "
                            "safe or sensitive")
    return out


def train_guard(data: str | Path, output: str | Path, *, embedder: str = DEFAULT_EMBEDDER,
                text_column: str | None = None, label_column: str = "label",
                lang_column: str = "lang", group_column: str = "id",
                train_langs: Sequence[str] | None = None, folds: int = 5, c: float = 1.0,
                sensitive: str = "exclude", seed: int = 0, cache: str | Path | None = None,
                quiet: bool = False,
                embedder_options: BackendConfig | dict[str, Any] | None = None,
                shared_cache: bool = True) -> dict[str, Any]:
    """Fit, cross-validate and save an embedding guard; returns what the file holds.
    Embeddings are read back from ``cache`` and (``shared_cache``) the embedding cache the
    embedding commands share; ``training.embedding_cache`` says how many were."""
    rows = read_texts(data, text_column, [label_column])
    labels = binary_labels(rows, label_column, sensitive)
    keep = [i for i, y in enumerate(labels) if y is not None]
    langs = np.array(rows.column(lang_column) if lang_column in rows.rows[0] else
                     ["all"] * len(rows.rows))[keep]
    groups = np.array(rows.column(group_column) if group_column in rows.rows[0] else
                      [str(n) for n in rows.numbers])[keep]
    y = np.array([labels[i] for i in keep])
    train_langs = list(train_langs or sorted(set(langs)))
    in_training = np.isin(langs, train_langs)
    _check_trainable(rows.path, y[in_training], train_langs)
    warning = warn_if_english_embedder(embedder, non_english_languages(rows, keep, lang_column))
    texts = [rows.texts[i] for i in keep]
    hits = new_counts()  # read back from a cache, of those embedded
    x, identity = embed_texts(texts, embedder, cache=cache, quiet=quiet,
                              config=BackendConfig.of(embedder_options),
                              shared_cache=shared_cache, counts=hits)
    scores = cross_validated_scores(x, y, groups, in_training, folds, c, seed)
    head = _fit(x[in_training], y[in_training], c)
    spec: dict[str, Any] = {
        "format": FORMAT,
        "embedder": embedder,
        "embedder_identity": identity,
        "coef": [float(w) for w in head.coef_[0]],
        "intercept": float(head.intercept_[0]),
        "training": _provenance(rows, label_column, lang_column, group_column, train_langs,
                                y, in_training, folds, c, sensitive, seed),
        "cross_validation": per_language(y, scores, langs, train_langs),
        "warnings": [warning] if warning else [],
    }
    # what the head was fitted on, so a run scoring these texts can say so (guards/embedding.py)
    spec["training"]["embedding_cache"] = hits
    spec["training"]["text_hashes"] = text_hashes([t for t, kept in zip(texts, in_training,
                                                                        strict=True) if kept])
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_whole(out, json.dumps(finite(spec), indent=1, ensure_ascii=False) + "\n")
    return spec


def _check_trainable(path: Path, y: np.ndarray, train_langs: list[str]) -> None:
    if len(y) == 0:
        raise LocalevalError(f"{path}: no labelled rows in the training languages "
                             f"({', '.join(train_langs)})")
    if len(set(y.tolist())) < 2:
        raise LocalevalError(f"{path}: the training rows have one label only; a guard needs "
                             "both harmful and safe examples")


class FittedHead(Protocol):
    """What is read of a fitted sklearn ``LogisticRegression`` (sklearn ships no types)."""

    coef_: np.ndarray
    intercept_: np.ndarray

    def predict_proba(self, x: np.ndarray) -> np.ndarray: ...


def _fit(x: np.ndarray, y: np.ndarray, c: float) -> FittedHead:
    from sklearn.linear_model import LogisticRegression

    head: FittedHead = LogisticRegression(C=c, max_iter=2000).fit(x, y)
    return head


def cross_validated_scores(x: np.ndarray, y: np.ndarray, groups: np.ndarray,
                           in_training: np.ndarray, folds: int, c: float,
                           seed: int) -> np.ndarray:
    """Each row's P(harmful) from the head of the fold that held its item out."""
    from sklearn.model_selection import StratifiedGroupKFold

    if folds < 2:
        raise LocalevalError("--folds must be 2 or more")
    scores = np.full(len(y), np.nan)
    split = StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=seed)
    for train, test in split.split(x, y, groups):
        train = train[in_training[train]]
        if len(set(y[train].tolist())) < 2:
            raise LocalevalError("a cross-validation fold has one label only: fewer --folds")
        scores[test] = _fit(x[train], y[train], c).predict_proba(x[test])[:, 1]
    return scores


def per_language(y: np.ndarray, scores: np.ndarray, langs: np.ndarray,
                 train_langs: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Out-of-fold PR-AUC (trapezoid, the papers'; and AP), ROC-AUC and counts per language,
    and ``all`` pooled."""
    out = {}
    for lang in [*sorted(set(langs.tolist())), "all"]:
        mask = np.ones(len(y), bool) if lang == "all" else langs == lang
        t, s = y[mask], scores[mask]
        out[lang] = {"n": int(mask.sum()), "n_harmful": int(t.sum()),
                     "trained_on": (set(langs.tolist()) <= set(train_langs)) if lang == "all"
                     else lang in train_langs,
                     "pr_auc": pr_auc_trapezoid(t, s), "average_precision":
                     average_precision(t, s), "roc_auc": roc_auc(t, s)}
    return out


def _provenance(rows: TextRows, label_column: str, lang_column: str, group_column: str,
                train_langs: list[str], y: np.ndarray, in_training: np.ndarray, folds: int,
                c: float, sensitive: str, seed: int) -> dict[str, Any]:
    return {
        "data": str(rows.path),
        "data_sha256": hashlib.sha256(rows.path.read_bytes()).hexdigest(),
        "columns": {"text": rows.text_column, "label": label_column, "lang": lang_column,
                    "group": group_column},
        "train_langs": train_langs, "sensitive": sensitive,
        "n_rows": len(rows.rows), "n_labelled": int(len(y)),
        "n_train": int(in_training.sum()), "n_train_harmful": int(y[in_training].sum()),
        "classifier": {"name": "LogisticRegression", "C": c, "max_iter": 2000},
        "cv": {"folds": folds, "split": "StratifiedGroupKFold", "shuffle": True, "seed": seed},
        "localeval_version": __version__, "scikit_learn_version": _sklearn_version(),
        "trained_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def _sklearn_version() -> str:
    import sklearn

    version: str = sklearn.__version__  # sklearn: untyped
    return version
