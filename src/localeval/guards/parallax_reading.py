"""``reading=parallax``: a guard's verdict read as the authors' newer code reads it (issue 72),
panuthept/Parallax-AI ``c853033`` ``parallax_ai/modules/safeguard_modules/base_module.py``.

``BaseGuardModule.get_executor_input`` (l.59-77) asks the server for up to 100 new tokens
(``max_tokens``, l.72) with the top 20 log-probs of each (``top_logprobs``, l.74);
``safeguard_completions`` (l.10-25) takes the top 20 of one new token, the module's
``representative_token_index`` (l.12), keeps the labels among all 20, renormalises over those
found (l.14-17) and adds the harmful label's probability (l.19-24). The index is the module's:
1 for Llama Guard 3 and 4 (``llamaguard_module.py:11, 23``), 0 for ShieldGemma
(``shieldgemma_module.py:10``). Where IRIS (the default, ``reading=iris``) reads the first of
its new tokens whose top 2 holds a label, this reads that one index, labelled or not.

The messages are the ones IRIS sends for these guards (each module's ``get_safeguard_input``,
compared in docs/fidelity.md rows P5-P7), so only the reading changes. What Parallax-AI does
where our reading fails: no label among the 20 sums nothing (0.0; ours a failed sample, which
``--on-failure iris`` scores 0.0), fewer new tokens than the index raises (ours a failed
sample).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..backends.base import Prompt, ScoreNext

if TYPE_CHECKING:
    from .staged import StagedGuard

IRIS, PARALLAX = "iris", "parallax"
NEW_TOKENS = 100  # c853033 base_module.py:72 max_tokens
TOP = 20  # c853033 base_module.py:74 top_logprobs; every one searched (l.12)


def at_index(guard: StagedGuard, prompt: Prompt, candidates: tuple[str, ...], index: int,
             add_special_tokens: bool = True, new_tokens: int = NEW_TOKENS) -> ScoreNext:
    """The request for the labels at new token ``index`` among the guard's top k (20 unless
    ``label_scores=top-N``), after up to ``new_tokens`` new tokens asked for, as the server
    was asked (so a prompt that leaves no room for them fails as there)."""
    return ScoreNext(prompt, candidates, add_special_tokens=add_special_tokens,
                     top=guard.label_top or TOP, positions=new_tokens, at=index)


def read_as_parallax(guard: StagedGuard, verdict_position: str) -> None:
    """The guard's labels read among the top 20 (c853033 base_module.py:74) at the new token its
    Parallax-AI module reads (``verdict_position``, in words)."""
    guard.top_k = TOP
    guard.verdict_position = verdict_position


def full_problem(name: str) -> str:
    """``label_scores=full`` reads a first labelled position over the whole vocabulary; the
    index read here is not searched for, and Parallax-AI reads its top 20."""
    return (f"{name} label_scores=full is not an option of Parallax-AI's reading, which reads "
            "the labels among the top 20 of one new token (use top-N for another k)")


def fixed_problem(name: str, index: int) -> str:
    return (f"{name} verdict_position=fixed reads the position right after the prompt; "
            f"reading=parallax reads new token {index} itself, as Parallax-AI does: use "
            "verdict_position with reading=iris")
