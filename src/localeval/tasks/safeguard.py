"""The safeguard task: a guard classifies prompts and responses; each verdict is one record.

Per item and requested kind it plans one sample:

- ``prompt`` — prompt classification: the guard sees the prompt (context ``with_prompt``).
- ``response`` with context ``with_prompt`` — the guard judges the response, the prompt given as
  the conversation's user turn (the paper's normal setting, Table 2).
- ``response`` with context ``without_prompt`` — the same response with an empty user turn
  (``""``), to see whether the guard leans on the prompt (paper §5, Fig. 4B).

A response sample is planned only for items that have a response. Records are
:class:`~localeval.records.samples.SafetySample`, what :mod:`localeval.analysis.gaps` reads: id,
lang, subset, kind, context, raw_label (three-way), label (binary after :mod:`.label_policy`,
None = excluded), score (P(harmful), or None with ``error`` when the guard failed), country,
guard, model. A failed sample is never scored as safe
unless ``--on-failure`` says how (``neutral`` or ``iris``).

Why this module is over 300 lines: the task's lifecycle (load, plan, respond, score, summarise,
describe) and the record it writes per sample stay together, so one file says what a sample
record holds and how every option changes it.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..analysis.safety import analyses, culture_choices
from ..analysis.severity import gold_severity
from ..backends.base import Backend
from ..backends.base import Executor as Execute
from ..data.safety import HUB_REPO, SafetyItem
from ..errors import LocalevalError
from ..guards import Conversation, Guard, GuardVerdict, get_guard
from ..guards.base import VERDICT_FAILURE
from ..records.safety import SCHEMA as SAFETY_SCHEMA
from ..records.safety import SafetyResults
from ..records.sample_kinds import Context, SampleKind
from ..records.samples import SafetySample
from .base import SAFEGUARD_PROTOCOL, Task
from .label_policy import DEFAULT_SENSITIVE, binary_label, describe_policy
from .options import SpecParts, make_options
from .safety_items import load_safety_items, safety_task
from .safety_options import CLASSIFY, DEFAULT_CLASSIFY, SafeguardOptions

# what results.json's ``failures`` keeps of a failed sample
FAILURE_FIELDS = ("id", "lang", "subset", "kind", "context", "failure", "error")


@dataclass(frozen=True)
class Planned:
    """One guard sample: an item, what is judged, and in which context."""

    item: SafetyItem
    kind: SampleKind
    context: Context
    model: str = ""  # the run's model, as its backend names it (kept on each record)

    def __post_init__(self) -> None:  # a caller's "prompt" or "with_prompt" as the types
        object.__setattr__(self, "kind", SampleKind(self.kind))
        object.__setattr__(self, "context", Context(self.context))

    def conversation(self) -> Conversation:
        """What the guard judges: the prompt alone, or the response with its prompt (or with an
        empty user turn), and the item's country for guards that use it."""
        meta = {"country": self.item.country} if self.item.country else {}
        meta["subset"] = self.item.subset  # SEA-LION Guard's Sensitive weight depends on it
        if not self.kind.judges_response:
            return Conversation(self.item.prompt, None, meta)
        prompt = self.item.prompt if self.context.shows_prompt else ""
        return Conversation(prompt, self.item.response, meta)


def sample_kinds(classify: Iterable[str]) -> list[tuple[SampleKind, Context]]:
    """The (kind, context) pairs for a ``classify`` list, in a fixed order, without repeats."""
    out: list[tuple[SampleKind, Context]] = []
    for name in classify:
        if name not in CLASSIFY:
            raise LocalevalError(f"unknown classification {name!r}; use one of "
                                 f"{', '.join(CLASSIFY)}")
        out += [(SampleKind(k), Context(c)) for k, c in CLASSIFY[name] if (k, c) not in out]
    return out


def own_classify(default: Iterable[str], guard: Guard) -> tuple[str, ...]:
    """What a run classifies when not told: the task's own, less what the guard cannot judge
    (a moderation API judges prompts alone, as the paper ran it: its response columns "-"),
    so the default works for every guard (issue 69); nothing left is refused by
    :func:`check_guard`, naming the flag."""
    default = tuple(default)
    if guard.supports_response:
        return default
    kept = tuple(c for c in default
                 if not any(SampleKind(k).judges_response for k, _ in CLASSIFY[c]))
    return kept or default


def check_guard(guard: Guard, kinds: Iterable[tuple[SampleKind, Context]]) -> None:
    if not guard.supports_response and any(k.judges_response for k, _ in kinds):
        raise LocalevalError(f"guard {guard.name!r} classifies prompts only; pass "
                             "--classify prompt (classify=['prompt'] in Python) or pick "
                             "another guard")


def plan(items: Sequence[SafetyItem], classify: Iterable[str],
         guard: Guard | None = None, model: str = "") -> list[Planned]:
    """Samples for every item and requested (kind, context); response samples need a response
    (and a guard that classifies responses)."""
    kinds = sample_kinds(classify)
    if guard is not None:
        check_guard(guard, kinds)
    return [Planned(item, kind, context, model) for item in items for kind, context in kinds
            if kind.exists_for(item)]


@dataclass(frozen=True)
class SafetyData:
    """What loading found: the items, and warnings about what was left out."""

    items: list[SafetyItem]
    warnings: list[str]


def record(p: Planned, verdict: GuardVerdict, *, guard: str, model: str,
           sensitive: str | None = None, neutral: float | None = None,
           log_text: bool = True) -> SafetySample:
    """The per-sample record of one planned sample and its verdict. A failed verdict keeps
    ``score`` None (left out, counted) unless ``neutral`` is given: then the score is that value
    and ``neutral`` is True on the record (``--on-failure neutral`` or ``iris``).
    The record holds the text judged (or, without ``log_text``, its sha256) and the guard's raw
    output (``guard_output``: generated text, label log-probs), to debug a verdict."""
    item, verdict = p.item, verdict.checked()  # any guard's score: a probability, or a failure
    raw = p.kind.raw_label(item)
    out: dict[str, Any] = {
        "id": item.id, "lang": item.lang, "subset": item.subset, "kind": p.kind,
        "context": p.context, "raw_label": raw, "label": binary_label(raw, p.kind, sensitive,
                                                               item.subset),
        # Parallax-AI's gold severity (analysis.severity): the annotators' mean, else the label
        "severity": gold_severity(raw, item.annotations.get(p.kind)),
        "score": verdict.score, "country": item.country, "guard": guard, "model": model,
        **_texts(p, log_text),
    }
    if verdict.raw is not None:
        out["guard_output"] = verdict.raw
    if verdict.error is not None or verdict.score is None:
        out["error"] = verdict.error or "no score"
        out["failure"] = verdict.failure or VERDICT_FAILURE
        if neutral is not None:
            out.update(score=neutral, neutral=True)
    return SafetySample(**out)


def _texts(p: Planned, log_text: bool) -> dict[str, str]:
    texts = {"prompt": p.item.prompt}
    if p.kind.judges_response and p.item.response is not None:
        texts["response"] = p.item.response
    if log_text:
        return texts
    return {f"{k}_sha256": hashlib.sha256(v.encode()).hexdigest() for k, v in texts.items()}


def _labels_outside_top(sample: SafetySample) -> bool:
    """Whether the sample's last ranked response (``guard_output``) had every label outside the
    top k: each rank recorded as None."""
    outputs = sample.guard_output if isinstance(sample.guard_output, list) else []
    ranked = [ranks for r in outputs
              if isinstance(r, dict) and isinstance(ranks := r.get("ranks"), dict)]
    return bool(ranked) and all(rank is None for rank in ranked[-1].values())


class SafeguardTask(Task):
    """A guard on a safety benchmark: ``sea-safeguard`` (Hub, a folder in its layout, or a file
    of items), ``safety-prompts`` (labelled prompt files: XSTest CSV, multilingual JBB JSONL) or
    ``safety-responses`` (the XSTest model_completions folder).

    ``classify``: any of prompt, response (with and without the prompt), response-with-prompt,
    response-without-prompt; None = the task's default. ``sensitive``: iris (default: the
    authors' code), paper (§3's text), safe, harmful or exclude (see :mod:`.label_policy`).
    ``guard``: a registered name (``localeval.guards.available_guards()``) or a
    :class:`~localeval.guards.Guard` object.
    ``guard_options`` go to a named guard (``cultural_awareness`` for zero-shot: items without
    a country are then left out).
    ``limit``: at most N item ids per subset (all languages kept). ``n_resamples``: bootstrap
    resamples for the CIs (0: none). ``calibrate_on``: the language whose best-F1 threshold is
    applied to every other language (``analysis.safety.threshold_transfer``). ``auprc``: the
    PR-AUC of the tables, ``trapezoid`` (the papers' code) or ``ap`` (average precision); both
    are in results.json. ``en_cell``: Table 2's EN cells, ``per-country`` (the authors') or
    ``pooled``. ``threshold_rule``: ``gt`` (score > t is harmful, the authors') or ``ge``.
    ``threshold_grid``: ``iris`` (the authors' float grid) or ``decimal`` (0.01 .. 0.99).
    ``one_class``: a file of one class scored as scikit-learn does (``iris``, the authors') or
    left out of the means (``left-out``). ``file_rounding``: ``none`` or ``iris`` (each file's
    value rounded to 0.1 points before a cell's mean).
    ``on_failure``: ``exclude`` (default: a failed sample is left out and
    counted, never scored), ``neutral`` (scored 1/number of labels and kept, as Parallax-AI's
    default output; results count them in ``n_neutral``) or ``iris`` (what IRIS scores that
    kind of failure: ``Guard.iris_failure_score``). ``log_samples``: samples.jsonl holds the
    prompt and response text (default) or, when False, their sha256 only.
    """

    results_schema = SAFETY_SCHEMA
    Options = SafeguardOptions
    progress_unit = "requests"
    rate_unit = "samples"

    def __init__(self, name: str, **options: Any):
        self.name = name
        self.options = make_options(SafeguardOptions, name, options)
        self.guard = make_guard(self.options.guard, self.options.guard_options)
        self.classify = tuple(self.options.classify or
                              own_classify(DEFAULT_CLASSIFY.get(name, ()), self.guard))
        self.kinds = sample_kinds(self.classify)
        self.default_model = self.guard.model
        check_guard(self.guard, self.kinds)

    def model_roles(self) -> dict[str, Any]:
        return self.guard.model_roles()

    def role_way(self, role: str) -> str | None:
        return self.guard.role_ways.get(role)

    def load(self) -> SafetyData:
        warnings: list[str] = []
        o = self.options
        items = load_safety_items(safety_task(self.name), o.data, o.subsets, o.langs, o.limit,
                                  o.dataset_revision)
        for field, why in self.guard.requires.items():
            kept = [i for i in items if getattr(i, field)]
            if not kept:
                raise LocalevalError(f"{why} needs items with a {field} (the cultural subsets "
                                     "of sea-safeguard); none of the selected items has one")
            if len(kept) < len(items):
                warnings.append(f"{why}: {len(items) - len(kept)} items without a {field} "
                                "left out")
            items = kept
        return SafetyData(items, warnings + self._coverage(items))

    def _coverage(self, items: list[SafetyItem]) -> list[str]:
        """Warnings about a requested kind no item can give; fails when there is nothing at
        all."""
        has_response = any(i.response is not None for i in items)
        if not has_response and all(k.judges_response for k, _ in self.kinds):
            raise LocalevalError(f"nothing to classify: the {self.name} items have no "
                                 "responses; use --classify prompt (classify=['prompt'] in "
                                 "Python)")
        return [f"no {kind} samples ({context}): no selected item has a response"
                for kind, context in self.kinds if kind.judges_response and not has_response]

    def plan(self, data: SafetyData, backend: Backend) -> list[Planned]:
        return plan(data.items, self.classify, self.guard, self._model_name(backend.identity))

    def _model_name(self, identity: dict[str, Any]) -> str:
        """The model its samples and results name: the backend's, else the guard's own name (a
        moderation API has no model of ours; issue 69: its Table 2 row read "(model)")."""
        return str(identity.get("model") or self.guard.name)

    def respond(self, planned: Sequence[Planned], execute: Execute) -> list[GuardVerdict]:
        return self.guard.verdicts([p.conversation() for p in planned], execute)

    def score(self, planned: Planned, answer: GuardVerdict) -> SafetySample:
        return record(planned, answer, guard=self.guard.name, model=planned.model,
                      sensitive=self.options.sensitive, neutral=self._failure_score(answer, planned),
                      log_text=self.options.log_samples)

    def _failure_score(self, verdict: GuardVerdict, planned: Planned) -> float | None:
        """The score a failed verdict is kept with (--on-failure neutral or iris), or None."""
        if verdict.score is not None or self.options.on_failure == "exclude":
            return None
        if self.options.on_failure == "neutral":
            return 1 / self.guard.n_labels
        return self.guard.iris_failure_score(verdict.error or "", planned.kind.judges_response,
                                             planned.conversation(), verdict.known_cause)

    def summarise(self, samples: Sequence[SafetySample], data: SafetyData,
                  identity: dict[str, Any]) -> SafetyResults:
        failed = [s for s in samples if s.is_failed]
        n_neutral = sum(1 for s in failed if s.neutral)
        # what the guard itself found (an embedding guard scoring its own training texts)
        advice = self._failure_advice(failed, str(identity.get("backend", "")))
        warnings = data.warnings + list(getattr(self.guard, "warnings", [])) + \
            ([self._failure_warning(failed, len(samples), n_neutral, advice)] if failed else [])
        kinds = {kind for kind, _ in self.kinds}
        # so the summary can say why --limit 100 gave 696 samples (issue 69)
        limited: dict[str, Any] = {"limit": self.options.limit,
                                   "langs": sorted({i.lang for i in data.items})} \
            if self.options.limit else {}
        # an agentic-moe guard's cultural classifier only: other runs' results keep no such key
        chosen = culture_choices(samples)
        cultural: dict[str, Any] = {"culture_choices": chosen} if chosen else {}
        return SafetyResults(
            schema_=self.results_schema,
            task=self.name,
            model=self._model_name(identity),
            guard=self.guard.name,
            classify=list(self.classify),
            cultural_awareness=self.cultural_awareness,
            label_policy={kind.value: describe_policy(kind, self.options.sensitive,
                                                      {i.subset for i in data.items})
                          for kind in SampleKind if kind in kinds},
            sensitive=self.options.sensitive or DEFAULT_SENSITIVE,
            n_samples=len(samples),
            n_failed=len(failed),
            failure_advice=advice,
            on_failure=self.options.on_failure,
            n_neutral=n_neutral,
            n_excluded=sum(1 for s in samples if s.label is None),
            **limited,
            failures=[{k: v for k, v in s.data().items() if k in FAILURE_FIELDS}
                      for s in failed[:50]],
            warnings=warnings,
            **analyses(samples, self.options),
            **cultural,
        )

    def _failure_warning(self, failed: list[SafetySample], n: int, n_neutral: int,
                         advice: str | None) -> str:
        reasons = Counter(s.failure or "unclassified" for s in failed).most_common(3)
        if self.options.on_failure == "iris":
            fate = (f"were scored as IRIS scores them: {n_neutral} kept, "
                    f"{len(failed) - n_neutral} left out (IRIS has no score for them)")
        else:
            fate = (f"were scored {1 / self.guard.n_labels:g} and kept (--on-failure neutral)"
                    if n_neutral else "are left out (never counted as safe)")
        return (f"{len(failed)} of {n} guard samples failed and {fate}; most common: "
                + "; ".join(f"{r} ({k})" for r, k in reasons) + (f"; {advice}" if advice else ""))

    def _failure_advice(self, failed: list[SafetySample], backend: str) -> str | None:
        """The way out when most samples failed because no label was among the guard's top k
        log-probs (what a small or untrained model gives), or None. A server gives log-probs
        of its top list alone (``--top-logprobs``)."""
        top = self.guard.label_top
        outside = sum(1 for s in failed
                      if s.failure == VERDICT_FAILURE and _labels_outside_top(s))
        if top is None or not failed or 2 * outside < len(failed):
            return None
        # a first-label guard (issue 49 item 1) finds no labelled position either under full
        fixed = (" --guard-option verdict_position=fixed" if
                 self.guard.verdict_position_used == "first-label"
                 and getattr(self.guard, "fixed_advisable", True) else "")
        said = (f"{outside} samples had no label among the top {top} log-probs at the verdict "
                "position (usual for a small or untrained model): ")
        if getattr(self.guard, "full_problem", None) is not None:  # this reading refuses full
            return (said + f"--guard-option label_scores=top-{10 * top} reads the labels among "
                    f"more of them (label_scores=full is not an option of this reading)"
                    + (" (a server's, with --top-logprobs and its --max-logprobs allowing "
                       "it)" if backend == "openai" else ""))
        return (said + f"--guard-option label_scores=full{fixed} reads the labels over the whole "
                "vocabulary"
                + (" (a server's, with --top-logprobs as large as the vocabulary and its "
                   "--max-logprobs allowing it)" if backend == "openai" else ""))

    @property
    def cultural_awareness(self) -> bool:
        """Whether the guard was told each item's country (the paper's Table 3 setting)."""
        return bool(getattr(self.guard.options, "cultural_awareness", False))

    def spec_parts(self, data: SafetyData) -> SpecParts:
        """Its options as run (the subsets and languages read, what it classifies), its guard
        as made (its name and options), how the guard was read and what the guard says of
        itself."""
        guard, o = self.guard, self.options
        given = replace(o, subsets=sorted({i.subset for i in data.items}),
                        langs=sorted({i.lang for i in data.items}), classify=list(self.classify),
                        guard=guard.name, guard_options=dict(guard.options.given) or None)
        return SpecParts(
            given, source=str(o.data) if o.data is not None else f"hf://{HUB_REPO}",
            protocol=SAFEGUARD_PROTOCOL,
            reading={"cultural_awareness": self.cultural_awareness,
                     "label_scores": guard.label_scores_used,  # issue 34 item 2: top-k default
                     # issue 49 item 1: first-label by default (None: where its authors read it)
                     "verdict_position": guard.verdict_position_used},
            # where the guard's verdict is read, in words: "verdict_position" is the option
            # (above, and in its options when given), one meaning per key (issue 61;
            # config.json before it wrote these words under verdict_position)
            described={"guard.template_source": guard.template_source,
                       "guard.reads_verdict_at": guard.verdict_position,
                       "guard.label_top": guard.label_top})


def make_guard(guard: str | Guard, options: dict[str, Any] | None) -> Guard:
    """A guard object as given, or the registered guard of that name made with ``options``."""
    if isinstance(guard, Guard):
        if options:
            raise LocalevalError("guard_options are for a guard given by name; configure a "
                                 "Guard object when you make it")
        return guard
    return get_guard(guard, **(options or {}))
