"""The ``hf:`` backend: local Hugging Face causal LMs (transformers), on CPU or GPU.

- backend: :class:`HFBackend`: loading, identity, tokenising, and scoring ``ScoreNext``.
- prefix: plans the prefix tree over every request's tokens (each shared prefix once).
- tree: forwards that tree level by level, each batch continuing its parents' KV cache rows.
- generate: batched greedy decoding (``Generate``) from the same tree.
- text: whole-text log-probs (``TextLogprobs``, for the contamination tests).
- attention: eager attention without copying the KV cache for every query head.
- row_blocks: dense layers fed whole blocks of rows (probed for the machine), so a row never
  depends on its batch.
- local_model: what those modules read from the backend (a protocol :class:`HFBackend` meets).
"""

from .backend import HFBackend

__all__ = ["HFBackend"]
