"""What the tree, generation and text modules read from the ``hf:`` backend: its loaded model,
tokenizer and settings (:class:`.backend.HFBackend` is the one such object). A protocol rather
than the class, since :mod:`.backend` imports those modules (no import circles)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import torch
    from transformers import (
        PretrainedConfig,
        PreTrainedModel,
        PreTrainedTokenizerBase,
        StoppingCriteriaList,
    )


class LocalModel(Protocol):
    """The backend as the tree, generation and text modules see it."""

    device: torch.device
    config: PretrainedConfig
    tokenizer: PreTrainedTokenizerBase
    identity: dict[str, Any]  # Backend.identity: model, revision, dtype, … (keys the cache)
    template_date: str
    batch_size: int | str  # rows per batch at most, or "auto" (the token budget alone)
    max_batch_tokens: int
    prefix_reuse: bool
    padding_side: str  # "right" or "left"
    pad_id: int  # the token id rows are padded with (masked out: any id will do)
    stats: dict[str, int]  # counts of forwarded, padding, prompt tokens, … (summed)
    _stops: dict[tuple[str, ...], StoppingCriteriaList]  # stop strings -> their matcher

    @property
    def model(self) -> PreTrainedModel:
        """The weights, loaded on first use."""
        ...

    def encode(self, text: str, special: bool) -> list[int]: ...

    def max_context(self) -> int | None: ...
