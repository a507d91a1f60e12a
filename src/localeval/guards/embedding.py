"""``--guard embedding:<guard file>``: a cheap guard of one's own, LionGuard-2 style: a
sentence embedding of the text and a logistic-regression head, trained with
``localeval train-guard`` (:mod:`localeval.tools.train_guard`). No language model is needed:
the run's backend is the embedder the file names (``st:...``), unless ``--model`` names another
``st:`` embedder of the same dimension (the same model from a local folder, say).

The text judged is the prompt for prompt classification and the response for response
classification. P(harmful) = 1 / (1 + exp(-(w · x + b))) with the file's weights: exactly what
the trained scikit-learn model's ``predict_proba`` gives. Embeddings go through the run's cache
like every other request.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..backends.base import Embed, Execute
from ..errors import LocalevalError
from .base import Conversation, Guard, GuardVerdict

FORMAT = "localeval.embedding-guard/1"


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

    def __init__(self, path: str):
        self.path = path
        self.spec = read_guard_file(path)
        self.weights = [float(w) for w in self.spec["coef"]]
        self.bias = float(self.spec["intercept"])
        self.model = str(self.spec["embedder"])
        self.template_source = f"{path} (embedder {self.model}, trained by localeval)"

    def probability(self, vector: Sequence[float]) -> float:
        if len(vector) != len(self.weights):
            raise LocalevalError(f"the embedder gave {len(vector)} numbers but {self.path} has "
                                 f"{len(self.weights)} weights: a different embedder?")
        z = sum(w * x for w, x in zip(self.weights, vector, strict=True)) + self.bias
        return 1 / (1 + math.exp(-z)) if z >= 0 else math.exp(z) / (1 + math.exp(z))

    def classify(self, conversations: Sequence[Conversation],
                 execute: Execute) -> list[GuardVerdict]:
        texts = [c.response if c.response is not None else c.prompt for c in conversations]
        out = []
        for r in execute([Embed(t) for t in texts]):
            if r.error or r.embedding is None:
                out.append(GuardVerdict(None, f"embedding failed: {r.error or 'no vector'}"))
            else:
                out.append(GuardVerdict(self.probability(r.embedding)))
        return out
