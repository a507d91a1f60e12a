"""Eager attention without copying the KV cache for every query head.

transformers' eager attention (the default here, for results that do not depend on the batch)
expands the keys and values of a grouped-query model to one copy per query head
(``repeat_kv``) on every forward pass: at each decode step the whole cache is copied
``heads / kv_heads`` times (3x for SmolLM2, 4x to 8x for Llama-3 and Qwen). Here the query heads
of a group are stacked instead, so each key and value is read where it lies. The dot products
are the same; tests/test_attention.py checks a padded batch's logits equal transformers' eager
bit for bit, and a decode step's within float32 rounding (~1e-7: one query row per head there,
where a group's stacked rows go through a different GEMM kernel). Rows stay independent of
their batch. On a 2-core CPU it cut batched decoding of 5-shot TMLU prompts by 30% (16.6 s to
11.6 s for 15 prompts, 64 new tokens each, SmolLM2-135M's shape at 4 layers).

It applies to the architectures whose eager attention we checked (``GROUPED``); any other module
runs its own module's eager function, unchanged. The backend asks for it in place of ``eager``
(``--attn eager``, the default); its identity says so (``layout``), so a cache never mixes its
results with transformers' eager ones.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import torch
    from transformers import PretrainedConfig

NAME = "localeval_grouped_eager"
# transformers modeling modules (= model types) whose eager attention is repeat_kv + the math
# below, each checked bit for bit in tests/test_attention.py
GROUPED = {"llama", "mistral", "qwen2", "qwen3", "gemma2"}
_own: dict[type, Callable[..., Any]] = {}


def grouped(attn: str, config: PretrainedConfig) -> bool:
    """Whether a model loads with our attention for the user's ``--attn``: ``eager`` on the
    architectures above (never for remote code, which may test the name). A look at the
    config, nothing imported: the backend's identity (its ``layout``) asks before any weights
    load, and a rerun served from the cache never imports transformers' modeling code."""
    return attn == "eager" and config.model_type in GROUPED and not getattr(config, "auto_map",
                                                                          None)


def implementation(attn: str, config: PretrainedConfig) -> str:
    """The attn_implementation to load a model with (ours registered with transformers when
    :func:`grouped`); called as the weights load, when transformers' modeling code is needed
    anyway."""
    if not grouped(attn, config):
        return attn
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(NAME, grouped_eager)
    AttentionMaskInterface.register(NAME, eager_mask)  # the same additive mask eager gets
    return NAME


def grouped_eager(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor,
                  value: torch.Tensor, attention_mask: torch.Tensor | None,
                  scaling: float | None = None, dropout: float = 0.0,
                  softcap: float | None = None,
                  **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """transformers' eager attention with each key/value head read in place by its group of
    query heads: ``query`` [batch, heads, length, dim] viewed as [batch, kv_heads, group x
    length, dim], one matmul per kv head."""
    import torch

    family = type(module).__module__.rsplit(".", 2)[-2]
    if family not in GROUPED or module.training or kwargs.get("sinks") is not None:
        own: tuple[torch.Tensor, torch.Tensor] = _own_eager(module)(
            module, query, key, value, attention_mask, scaling=scaling, dropout=dropout,
            softcap=softcap, **kwargs)
        return own
    batch, heads, length, dim = query.shape
    kv_heads = key.shape[1]
    group = heads // kv_heads
    if scaling is None:
        # head_dim: an int on every GROUPED family's attention module (torch types a module's
        # attributes as its tensors or submodules); float(): typeshed types int ** float as Any
        scaling = float(cast("int", module.head_dim) ** -0.5)
    stacked = query.reshape(batch, kv_heads, group * length, dim)
    weights = (torch.matmul(stacked, key.transpose(2, 3)) * scaling).view(batch, heads, length, -1)
    if softcap is not None:
        weights = torch.tanh(weights / softcap) * softcap
    if attention_mask is not None:
        weights = weights + attention_mask
    weights = torch.nn.functional.softmax(weights, dim=-1, dtype=torch.float32).to(query.dtype)
    out = torch.matmul(weights.view(batch, kv_heads, group * length, -1), value)
    return out.view(batch, heads, length, dim).transpose(1, 2).contiguous(), weights


def _own_eager(module: torch.nn.Module) -> Callable[..., Any]:
    """The eager attention function of the module's own modeling file."""
    cls = type(module)
    if cls not in _own:
        _own[cls] = importlib.import_module(cls.__module__).eager_attention_forward
    return _own[cls]
