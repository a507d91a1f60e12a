"""The safeguard task: a guard classifies prompts and responses; each verdict is one record.

Per item and requested kind it plans one sample:

- ``prompt`` — prompt classification: the guard sees the prompt (context ``with_prompt``).
- ``response`` with context ``with_prompt`` — the guard judges the response, the prompt given as
  the conversation's user turn (the paper's normal setting, Table 2).
- ``response`` with context ``without_prompt`` — the same response with an empty user turn
  (``""``), to see whether the guard leans on the prompt (paper §5, Fig. 4B).

A response sample is planned only for items that have a response. Records are the per-sample
dicts of :mod:`localeval.analysis.gaps`: id, lang, subset, kind, context, raw_label (three-way),
label (binary after :mod:`.label_policy`, None = excluded), score (P(harmful), or None with
``error`` when the guard failed), country, guard, model. A failed sample is never scored as safe.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..backends.base import Request, Response
from ..data.safety import SafetyItem
from ..errors import LocalevalError
from ..guards.base import Guard, GuardVerdict
from ..guards.base import run_stages as guard_stages
from .label_policy import binary_label

# classify choice -> the (kind, context) samples it plans
CLASSIFY = {
    "prompt": (("prompt", "with_prompt"),),
    "response": (("response", "with_prompt"), ("response", "without_prompt")),
    "response-with-prompt": (("response", "with_prompt"),),
    "response-without-prompt": (("response", "without_prompt"),),
}


@dataclass(frozen=True)
class Planned:
    """One guard sample: an item, what is judged, and in which context."""

    item: SafetyItem
    kind: str  # "prompt" | "response"
    context: str  # "with_prompt" | "without_prompt"

    def guard_input(self) -> tuple[str, str | None]:
        """(prompt, response) as the guard receives them."""
        if self.kind == "prompt":
            return self.item.prompt, None
        prompt = self.item.prompt if self.context == "with_prompt" else ""
        return prompt, self.item.response


def sample_kinds(classify: Iterable[str]) -> list[tuple[str, str]]:
    """The (kind, context) pairs for a ``classify`` list, in a fixed order, without repeats."""
    out: list[tuple[str, str]] = []
    for name in classify:
        if name not in CLASSIFY:
            raise LocalevalError(f"unknown classification {name!r}; use one of "
                                 f"{', '.join(CLASSIFY)}")
        out += [k for k in CLASSIFY[name] if k not in out]
    return out


def plan(items: Sequence[SafetyItem], classify: Iterable[str],
         guard: Guard | None = None) -> list[Planned]:
    """Samples for every item and requested (kind, context); response samples need a response
    (and a guard that classifies responses)."""
    kinds = sample_kinds(classify)
    if guard is not None and not guard.supports_response and any(k == "response"
                                                                 for k, _ in kinds):
        raise LocalevalError(f"guard {guard.name!r} classifies prompts only; pass "
                             "classify=('prompt',) or pick another guard")
    return [Planned(item, kind, context) for item in items for kind, context in kinds
            if kind == "prompt" or item.response is not None]


Execute = Callable[[list[Request]], list[Response]]


def run_stages(guard: Guard, planned: Sequence[Planned], execute: Execute,
               country: Callable[[Planned], str | None] = lambda p: p.item.country
               ) -> list[GuardVerdict]:
    """Run the guard's stages over all samples (identical requests once); one verdict each."""
    inputs = [(*p.guard_input(), country(p)) for p in planned]
    return guard_stages(guard, inputs, execute)


def record(p: Planned, verdict: GuardVerdict, *, guard: str, model: str,
           sensitive: str | None = None) -> dict:
    """The per-sample record of one planned sample and its verdict."""
    item = p.item
    raw = item.prompt_label if p.kind == "prompt" else item.response_label
    out = {
        "id": item.id, "lang": item.lang, "subset": item.subset, "kind": p.kind,
        "context": p.context, "raw_label": raw, "label": binary_label(raw, p.kind, sensitive),
        "score": verdict.score, "country": item.country, "guard": guard, "model": model,
    }
    if verdict.error is not None or verdict.score is None:
        out["error"] = verdict.error or "no score"
    return out
