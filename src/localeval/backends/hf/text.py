"""``TextLogprobs`` on a local model: every token's log-prob and the moments of the next-token
distribution, for Min-K% Prob and Min-K%++ (:mod:`localeval.tasks.contamination`).

Texts are tokenised with the tokenizer's defaults (as the Min-K% and Min-K%++ reference code,
swj0419/detect-pretrain-code ``src/run.py`` and zjysteven/mink-plus-plus ``run.py``, do) and
forwarded whole, right-padded, in batches of equal padded width (a multiple of 8), longest first,
within a token budget and a budget for the full-vocabulary log-probs. As for scoring
(:mod:`.backend`), equal widths and eager attention make a text's numbers independent of the
batch it is in: the results are the same at any batch size.

Per text of n tokens: n - 1 values (the first token has no context), each read from the
log-softmax at the position before it; mean E[log p] and standard deviation
sqrt(E[(log p - E[log p])^2]) over the vocabulary, in float32.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..base import Failed, Response, TextLogprobs, TokenLogprobs
from ..failures import ContextOverflow
from .row_blocks import dense_row_blocks, dense_weight
from .row_blocks import padded as _padded

if TYPE_CHECKING:
    import torch

    from .local_model import LocalModel

LOGITS_BUDGET_BYTES = 1 << 30  # full-vocabulary log-probs held at once, in float32 terms


def run_text_logprobs(backend: LocalModel, requests: list[TextLogprobs]
                      ) -> Iterator[tuple[int, Response]]:
    """Yield (index, response) for each request, batch by batch."""
    encoded = [backend.encode(r.text, True) for r in requests]
    limit = backend.max_context()
    ok: list[int] = []
    for i, ids in enumerate(encoded):
        if limit and len(ids) > limit:
            yield i, Failed(ContextOverflow(
                f"text has {len(ids)} tokens, over the model's context of {limit} (not "
                "truncated: the score would be of another text)"))
        elif len(ids) < 2:
            yield i, TokenLogprobs(token_logprobs=[], token_means=[], token_stds=[],
                              n_prompt_tokens=len(ids))
        else:
            ok.append(i)
    for batch in _batches(backend, [encoded[i] for i in ok]):
        rows = [encoded[ok[k]] for k in batch]
        for k, response in zip(batch, _forward(backend, rows), strict=True):
            yield ok[k], response


def _batches(backend: LocalModel, texts: list[list[int]]) -> Iterator[list[int]]:
    # get_output_embeddings is unannotated in transformers (an untyped call under --strict)
    head: torch.nn.Module = backend.model.get_output_embeddings()  # type: ignore[no-untyped-call]
    vocab = dense_weight(head).shape[0]
    buckets: dict[int, list[int]] = {}
    for i, ids in enumerate(texts):
        buckets.setdefault(_padded(len(ids)), []).append(i)
    for width in sorted(buckets, reverse=True):
        per_batch = max(1, min(backend.max_batch_tokens // width,
                               LOGITS_BUDGET_BYTES // (4 * 4 * vocab * width)))
        if isinstance(backend.batch_size, int):  # else "auto": the budgets alone
            per_batch = min(per_batch, backend.batch_size)
        rows = buckets[width]
        for start in range(0, len(rows), per_batch):
            yield rows[start : start + per_batch]


def _forward(backend: LocalModel, rows: list[list[int]]) -> list[TokenLogprobs]:
    import torch

    width = _padded(max(len(r) for r in rows))
    pad = backend.pad_id
    ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows], device=backend.device)
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows],
                        device=backend.device)
    positions = torch.arange(width, device=backend.device).expand(len(rows), -1)
    backend.stats["forwarded_tokens"] += sum(len(r) for r in rows)
    backend.stats["padding_tokens"] += len(rows) * width - sum(len(r) for r in rows)
    with torch.inference_mode(), dense_row_blocks(backend.model):
        logits: torch.Tensor = backend.model(input_ids=ids, attention_mask=mask,
                                             position_ids=positions, use_cache=False).logits
        return [_row(backend, logits[k, : len(r) - 1], ids[k, 1 : len(r)])
                for k, r in enumerate(rows)]


def _row(backend: LocalModel, logits: torch.Tensor, targets: torch.Tensor) -> TokenLogprobs:
    logp = logits.float().log_softmax(-1)
    actual = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    p = logp.exp()
    mean = (p * logp).sum(-1)
    # Two passes (sum p (log p - mean)^2) rather than E[(log p)^2] - mean^2, which cancels
    # catastrophically in float32 when the distribution is peaked.
    var = (p * (logp - mean.unsqueeze(-1)).square()).sum(-1)
    backend.stats["requests"] += 1
    backend.stats["prompt_tokens"] += len(targets) + 1
    return TokenLogprobs(token_logprobs=actual.cpu().tolist(), token_means=mean.cpu().tolist(),
                    token_stds=var.sqrt().cpu().tolist(), n_prompt_tokens=len(targets) + 1)

