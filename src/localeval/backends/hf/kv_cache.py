"""The KV cache's name in a model's forward and in its output: transformers 5.24 renamed
``past_key_values`` to ``cache`` (the old name warns on every forward and goes in 5.40;
``utils/generic.py:_rename_kwargs_for_bc``), earlier releases know only ``past_key_values``."""

from __future__ import annotations

import inspect
from typing import Any

_BY_CLASS: dict[type, str] = {}  # once per model class: a decode step asks at every token


def cache_argument(model) -> str:
    """The keyword ``model``'s forward (and ``generate``) takes its KV cache by."""
    kind = type(model)
    if kind not in _BY_CLASS:
        try:
            new = "cache" in inspect.signature(model.forward).parameters
        except (TypeError, ValueError):  # a forward without a signature: the old name
            new = False
        _BY_CLASS[kind] = "cache" if new else "past_key_values"
    return _BY_CLASS[kind]


def returned_cache(output) -> Any:
    """The KV cache a forward returned (read by the name it has, so no deprecation notice)."""
    found = getattr(output, "cache", None)
    return found if found is not None else output.past_key_values
