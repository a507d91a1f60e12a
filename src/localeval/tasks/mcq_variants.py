"""Robustness figures for multiple choice: each question asked again with its options in other
orders (``--permute-options K``) and, for sampled generation, drawn again (``--repeats N``).

Orders are the K cyclic shifts of the options, deterministic: shift k puts original option
``(i + k) mod n`` at position i, so with K equal to the number of options each option sits in
each position once (Twinkle Eval shuffles the options randomly instead). A question with fewer
than K options is asked in its n orders only; a K above the most options any question has is
refused when the questions are planned (results.json would count orders never asked). Repeats ask for the r-th independent draw
(``Generate.sample = r``, the model's own sampling, seeded): the first sample of a run with
repeats is draw 0, not the greedy answer. Every variant is its own request through the run's
cache, so a killed run resumes and a rerun asks nothing again.

The question's own sample (order 0, draw 0) is the run's sample and its metrics are the run's
headline; each other variant is a short record in its sample's ``variants`` (the prediction
mapped back to the original option's letter), summarised in results.json's ``robustness``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ..backends.base import Executor as Execute
from ..backends.base import Generate, Prompt, Request, Response
from ..data.items import LETTERS, MCQItem
from ..errors import LocalevalError
from ..metrics.spread import mean_std_interval
from ..records.mcq import OrderSpread, Robustness, Spread
from ..records.samples import MCQSample, VariantEntry
from .mcq_options import MCQOptions


@dataclass(frozen=True)
class Variant:
    order: int  # the cyclic shift of the options
    repeat: int | None  # the draw (None: greedy or likelihood)


@dataclass
class Planned:
    """A question as tasks/mcq.py plans it: its prompt and request, and the planned questions
    of its other orders and draws (``variants``)."""

    item: MCQItem
    prompt: Prompt
    n_shots: int
    request: Request
    skipped: tuple[int, ...] = ()  # dev shots left out to fit the context (0-based)
    variants: tuple[tuple[Variant, Planned], ...] = ()


@dataclass(frozen=True)
class WithVariants:
    """A question's answer and the answers of its other variants, in its ``variants`` order."""

    main: Response
    others: tuple[Response, ...]


def has_variants(options: MCQOptions) -> bool:
    return options.permute_options > 1 or options.repeats > 1


def variants(orders: int, repeats: int) -> list[Variant]:
    """Every variant but the question's own (order 0, the first draw)."""
    draws: list[int | None] = list(range(repeats)) if repeats > 1 else [None]
    return [Variant(k, r) for k in range(orders) for r in draws if (k, r) != (0, draws[0])]


def shifted(item: MCQItem, k: int) -> MCQItem:
    """The question with its options shifted by ``k``: position i holds option (i + k) mod n,
    and the gold letter follows its option."""
    n = len(item.options)
    options = item.options[k:] + item.options[:k]
    return replace(item, options=options, answer=LETTERS[(LETTERS.index(item.answer) - k) % n])


def original_letter(letter: str | None, k: int, n: int) -> str | None:
    """The original letter of the option at ``letter``'s position in order ``k`` (a letter past
    the question's options, as a fixed letter list may score, stays as it is: wrong)."""
    if letter is None or letter not in LETTERS[:n]:
        return letter
    return LETTERS[(LETTERS.index(letter) + k) % n]


def _drawn(planned: Planned, repeat: int | None, seed: int | None) -> Planned:
    """The planned question as draw ``repeat`` (None: as it is), seeded by ``seed`` (--seed)."""
    if repeat is None or not isinstance(planned.request, Generate):
        return planned
    return replace(planned, request=replace(planned.request, sample=repeat, seed=seed))


def plan_with_variants(subjects: Sequence[tuple[str, list[MCQItem], list[MCQItem]]],
                       plan_one: Callable[[str, list[MCQItem], list[MCQItem]], list[Planned]],
                       options: MCQOptions) -> list[Planned]:
    """Each subject's planned questions (``plan_one(subject, dev, test)``), each carrying the
    planned samples of its other variants (``variants``: (Variant, planned) pairs)."""
    orders, repeats = options.permute_options, options.repeats
    first = 0 if repeats > 1 else None
    most = max((len(item.options) for _, _, test in subjects for item in test), default=0)
    if orders > max(most, 1):
        raise LocalevalError(f"--permute-options {orders}: the questions have at most {most} "
                             f"options, so there are only {most} orders to ask them in; give "
                             f"--permute-options {most} or fewer")
    out: list[Planned] = []
    for subject, dev, test in subjects:
        base = [_drawn(p, first, options.seed) for p in plan_one(subject, dev, test)]
        extra: list[list[tuple[Variant, Planned]]] = [[] for _ in base]
        for v in variants(orders, repeats):
            where = [i for i, item in enumerate(test) if v.order < len(item.options)]
            again = plan_one(subject, dev, [shifted(test[i], v.order) for i in where])
            for i, p in zip(where, again, strict=True):
                extra[i].append((v, _drawn(p, v.repeat, options.seed)))
        out += [replace(p, variants=tuple(e)) for p, e in zip(base, extra, strict=True)]
    return out


def respond_with_variants(planned: Sequence[Planned],
                          execute: Execute) -> list[Response | WithVariants]:
    """One call through the cache for every request; a question without variants gets its
    response as it is."""
    requests = [p.request for p in planned] + [vp.request for p in planned
                                               for _, vp in p.variants]
    responses = execute(requests)
    out: list[Response | WithVariants] = []
    rest = len(planned)
    for p, main in zip(planned, responses, strict=False):
        if not p.variants:
            out.append(main)
            continue
        out.append(WithVariants(main, tuple(responses[rest:rest + len(p.variants)])))
        rest += len(p.variants)
    return out


def score_with_variants(planned: Planned, answer: Response | WithVariants,
                        scorer: Callable[[Planned, Response], MCQSample]) -> MCQSample:
    """The question's sample record, with a line per other variant (``variants``)."""
    if not isinstance(answer, WithVariants):
        return scorer(planned, answer)
    entries = [variant_record(v, scorer(vp, r), len(planned.item.options))
               for (v, vp), r in zip(planned.variants, answer.others, strict=True)]
    main = scorer(planned, answer.main)  # validated anew with its variants (model_copy is not)
    given = {name: getattr(main, name) for name in main.model_fields_set}  # as it was made
    return type(main).model_validate({**given, **(main.model_extra or {}), "variants": entries})


def variant_record(variant: Variant, scored: MCQSample, n_options: int) -> VariantEntry:
    """A variant's line in its sample's ``variants``: the prediction as the original option's
    letter, and whether it is right (None: the request failed)."""
    pred = original_letter(scored.pred, variant.order, n_options)
    if variant.repeat is None:
        return VariantEntry(order=variant.order, pred=pred, correct=scored.correct)
    return VariantEntry(order=variant.order, pred=pred, correct=scored.correct,
                        repeat=variant.repeat)


def _entries(sample: MCQSample, first: int | None) -> list[VariantEntry]:
    own = VariantEntry(order=0, pred=sample.pred, correct=sample.correct, repeat=first)
    return [own, *(sample.variants or [])]


def _accuracy(entries: list[VariantEntry]) -> float | None:
    scored = [e.correct for e in entries if e.correct is not None]
    return sum(scored) / len(scored) if scored else None


def _in(rows: list[list[VariantEntry]], order: int | None,
        repeat: int | None) -> list[VariantEntry]:
    """Every entry of ``order`` (None: any) and draw ``repeat``."""
    return [e for r in rows for e in r
            if (order is None or e.order == order) and e.repeat == repeat]


def _permutation(rows: list[list[VariantEntry]], orders: int,
                 first: int | None) -> OrderSpread:
    per_order = [_accuracy(_in(rows, k, first)) for k in range(orders)]
    preds = [[e.pred for e in r if e.repeat == first] for r in rows]
    answered = [p for p in preds if len(p) > 1 and None not in p]
    same = sum(len(set(p)) == 1 for p in answered) / len(answered) if answered else None
    return OrderSpread.made({"accuracy": per_order,
                             **mean_std_interval([a for a in per_order if a is not None]),
                             "same_option": same, "n_questions": len(answered)})


def _draws(rows: list[list[VariantEntry]], repeats: int) -> Spread:
    per_draw = [_accuracy(_in(rows, 0, d)) for d in range(repeats)]
    return Spread.made({"accuracy": per_draw,
                        **mean_std_interval([a for a in per_draw if a is not None])})


def robustness(samples: Sequence[MCQSample], options: MCQOptions) -> Robustness:
    """results.json's ``robustness``: accuracy per order (first draws) with its mean and std,
    and the share of questions answered with the same option in every order; accuracy per
    draw (order 0) with its mean, std and 95% t interval."""
    orders, repeats = options.permute_options, options.repeats
    first = 0 if repeats > 1 else None
    rows = [_entries(s, first) for s in samples]
    # a spread is absent, not null, when its option is off (the folder's bytes as before)
    return Robustness.made({"orders": orders, "repeats": repeats,
                            **({"permutation": _permutation(rows, orders, first)}
                               if orders > 1 else {}),
                            **({"draws": _draws(rows, repeats)} if repeats > 1 else {})})
