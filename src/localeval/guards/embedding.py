"""``--guard embedding:<guard file>``: a cheap guard of one's own, LionGuard-2 style: a
sentence embedding of the text and a logistic-regression head, trained with
``localeval train-guard`` (:mod:`localeval.tools.train_guard`). No language model is needed:
the run's backend is the embedder the file names (``st:...``), unless ``--model`` names another
``st:`` embedder of the same dimension (the same model from a local folder, say).

The text judged is the prompt for prompt classification and the response for response
classification. P(harmful) = 1 / (1 + exp(-(w · x + b))) with the file's weights: exactly what
the trained scikit-learn model's ``predict_proba`` gives. Embeddings go through the run's cache
like every other request.

Scored on its own training texts a guard looks far better than it is (trained on English
JailbreakBench and scored on it: PR-AUC 93.0, against 69.9 cross-validated). So the file keeps
a short hash of each text its head was fitted on (``training.text_hashes``: the first 16 hex
digits of the text's UTF-8 SHA-256, sorted), and a run whose texts are 1% or more of those
warns, naming the share (:attr:`EmbeddingGuard.warnings`; the task adds them to the run's).
Translations of a training text are other texts, so they are not caught.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..backends.base import Embed, Embedding, error_of
from ..backends.base import Executor as Execute
from ..errors import LocalevalError
from .base import Conversation, Guard, GuardVerdict, cause_of
from .options import EmbeddingOptions

FORMAT = "localeval.embedding-guard/1"
HASH_DIGITS = 16  # 64 bits of SHA-256 per text: no collision in any realistic data set
OVERLAP_WARNING = 0.01  # share of the texts scored that were trained on, from which it warns


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_DIGITS]


def text_hashes(texts: Sequence[str]) -> list[str]:
    """The guard file's ``training.text_hashes``: each distinct text's hash, sorted."""
    return sorted({text_hash(t) for t in texts})


def read_guard_file(path: str | Path) -> dict[str, Any]:
    """The guard file's contents, checked: its format, a weight vector and an embedder."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise LocalevalError(f"cannot read guard file {path}: {e}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else None
        raise LocalevalError(f"{path} is not a localeval embedding guard (format {found!r}, "
                             f"not {FORMAT!r}); make one with `localeval train-guard`")
    for field in ("coef", "intercept", "embedder"):
        if field not in data:
            raise LocalevalError(f"{path}: field {field!r} is missing")
    return data


class EmbeddingGuard(Guard):
    name = "embedding"
    verdict_position = "logistic regression on the sentence embedding of the text"

    Options = EmbeddingOptions

    def __init__(self, options: EmbeddingOptions | None = None):
        o = options or EmbeddingOptions()
        super().__init__(o)
        path = self.path = o.path
        self.spec = read_guard_file(path)
        self.weights = [float(w) for w in self.spec["coef"]]
        self.bias = float(self.spec["intercept"])
        self.model = str(self.spec["embedder"])
        self.template_source = f"{path} (embedder {self.model}, trained by localeval)"
        self.trained_on = frozenset((self.spec.get("training") or {}).get("text_hashes") or ())
        self.warnings: list[str] = []  # what the run should warn about (training texts scored)

    def probability(self, vector: Sequence[float]) -> float:
        if len(vector) != len(self.weights):
            raise LocalevalError(f"the embedder gave {len(vector)} numbers but {self.path} has "
                                 f"{len(self.weights)} weights: a different embedder?")
        z = sum(w * x for w, x in zip(self.weights, vector, strict=True)) + self.bias
        return 1 / (1 + math.exp(-z)) if z >= 0 else math.exp(z) / (1 + math.exp(z))

    def classify(self, conversations: Sequence[Conversation],
                 execute: Execute) -> list[GuardVerdict]:
        texts = [c.response if c.response is not None else c.prompt for c in conversations]
        self._check_overlap(texts)
        out = []
        for r in execute([Embed(t) for t in texts]):
            if isinstance(r, Embedding):
                out.append(GuardVerdict(self.probability(r.embedding)))
            else:
                out.append(GuardVerdict(None, f"embedding failed: {error_of(r) or 'no vector'}",
                                        cause=cause_of(r)))
        return out

    def _check_overlap(self, texts: Sequence[str]) -> None:
        """A warning when 1% or more of ``texts`` are texts the head was fitted on."""
        if not self.trained_on or not texts:
            return
        seen = sum(1 for t in texts if text_hash(t) in self.trained_on)
        if seen and seen / len(texts) >= OVERLAP_WARNING:
            self.warnings.append(
                f"{seen} of {len(texts)} texts scored ({seen / len(texts):.0%}) are texts "
                f"{self.path} was trained on: their scores are training-set scores, higher than "
                "on unseen text (the file's cross_validation figures are the fair ones)")
