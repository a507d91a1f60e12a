"""The KV cache's name in a model's forward and in its output: transformers 5.24 renamed
``past_key_values`` to ``cache`` (the old name warns on every forward and goes in 5.40;
``utils/generic.py:_rename_kwargs_for_bc``), earlier releases know only ``past_key_values``."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch
    from transformers import Cache

_BY_CLASS: dict[type, str] = {}  # once per model class: a decode step asks at every token


def cache_argument(model: torch.nn.Module) -> str:
    """The keyword ``model``'s forward (and ``generate``) takes its KV cache by."""
    kind = type(model)
    if kind not in _BY_CLASS:
        try:
            new = "cache" in inspect.signature(model.forward).parameters
        except (TypeError, ValueError):  # a forward without a signature: the old name
            new = False
        _BY_CLASS[kind] = "cache" if new else "past_key_values"
    return _BY_CLASS[kind]


def returned_cache(output: object) -> Cache:
    """The KV cache a forward with ``use_cache=True`` returned (read by the name it has, so no
    deprecation notice). ``output``: a model's output, whatever its class."""
    found: Cache | None = getattr(output, "cache", None)
    if found is None:
        found = getattr(output, "past_key_values", None)
    if found is None:
        raise TypeError(f"{type(output).__name__} holds no KV cache (cache, past_key_values)")
    return found
