"""Accuracy and its breakdowns for multiple-choice results. Pure functions over sample records.

- ``accuracy``: mean of 0/1 correctness; standard error ``sqrt(s² / n)`` with the sample variance
  ``s² = n/(n-1) · p(1-p)`` (as lm-evaluation-harness reports it), and the Wilson score 95%
  interval ``low``/``high`` (:mod:`.proportion`), which the tables show: it stays honest at
  0 of n and n of n, where ``stderr`` is 0.
- A group (discipline, level, year) is scored **micro**: all its questions pooled. The TMLU
  paper's Table 3 does this per discipline, and its "Average" is the plain mean of the discipline
  scores (e.g. Claude-3-Opus: (83.06+64.32+75.93+90.41+54.23)/5 = 73.59).
- ``macro``: the mean of subject accuracies, standard error ``sqrt(Σ se_s²) / S``.
- A question whose request failed (a server error, a timeout: ``failed`` on the sample) is left
  out of every accuracy and counted in ``n_failed``; an answer that cannot be parsed is the
  model's and stays wrong, as the papers count it.
- Years: with a ``year_floor`` (TMLU: 2017) every earlier year is pooled with it, as the TMLU
  paper's temporal analysis does, in a group named "2017 and earlier"; ``by_year_ungrouped``
  keeps each year.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from ..records.mcq import Accuracy, Macro, MCQMetrics
from ..records.samples import MCQSample
from .group import grouped
from .proportion import wilson_interval

Row = dict[str, Any]  # one row of numbers in results.json ("acc", "stderr", "n" ...)


class SubjectMeta(Protocol):
    """What :func:`aggregate` reads of a subject (data.catalog.SubjectInfo has it)."""

    @property
    def discipline(self) -> str: ...
    @property
    def level(self) -> str | None: ...


def accuracy(correct: Iterable[bool]) -> Row:
    values = [1.0 if c else 0.0 for c in correct]
    n = len(values)
    if n == 0:
        return {"n": 0, "correct": 0, "acc": None, "stderr": None, "low": None, "high": None}
    p = sum(values) / n
    stderr = math.sqrt(p * (1 - p) / (n - 1)) if n > 1 else None
    interval = wilson_interval(int(sum(values)), n)
    assert interval is not None  # n > 0 here: Wilson's interval exists
    low, high = interval
    return {"n": n, "correct": int(sum(values)), "acc": p, "stderr": stderr,
            "low": low, "high": high}


def _answered(members: Sequence[MCQSample], **more: Any) -> Accuracy:
    """Accuracy over the questions the model answered or failed to answer; a question whose
    request failed (``failed``: the server or backend, not the model) is left out and counted
    in ``n_failed``, never scored as wrong. ``more``: what else the row says (a subject's
    discipline and level)."""
    scored = [s for s in members if not s.failed]
    return Accuracy.made({**accuracy(s.correct is True for s in scored),
                          "n_unanswered": sum(1 for s in scored if s.pred is None),
                          "n_failed": len(members) - len(scored), **more})


def _group(samples: Sequence[MCQSample], key: Callable[[MCQSample], object],
           score: Callable[[list[MCQSample]], Accuracy] = _answered) -> dict[str, Accuracy]:
    """Accuracy per value of ``key`` (as a string, sorted); samples whose key is None skipped."""
    def name(s: MCQSample) -> str | None:
        k = key(s)
        return None if k is None else str(k)

    return grouped(score, samples, name)


def _macro(by_subject: dict[str, Accuracy]) -> Macro | None:
    """Mean of subject accuracies; its standard error sqrt(sum se_s^2) / S."""
    accs = [r.acc for r in by_subject.values() if r.acc is not None]
    if not accs:
        return None
    ses = [r.stderr for r in by_subject.values() if r.acc is not None]
    return Macro(acc=sum(accs) / len(accs),
                 stderr=math.sqrt(sum(se * se for se in ses if se is not None)) / len(ses)
                 if None not in ses else None,
                 n_subjects=len(accs))


def _year_group(year: object, floor: int | None) -> str | None:
    """The year's group: the year (as text), or every year up to ``floor`` pooled."""
    if year is None:
        return None
    text = str(year)
    if floor is not None and text.isdigit() and int(text) <= floor:
        return f"{floor} and earlier"
    return text


def aggregate(samples: Sequence[MCQSample], subject_info: Mapping[str, SubjectMeta],
              disciplines: tuple[str, ...], year_floor: int | None = None) -> MCQMetrics:
    """All the numbers a results.json holds. ``subject_info`` maps subject id -> SubjectInfo."""
    def info(s: MCQSample, attr: str) -> object:
        meta = subject_info.get(s.subject) if s.subject is not None else None
        return getattr(meta, attr, None) if meta else None

    def subject(members: list[MCQSample]) -> Accuracy:
        meta = subject_info.get(str(members[0].subject))
        return _answered(members, discipline=meta.discipline if meta else None,
                         level=meta.level if meta else None)

    by_subject = _group(samples, lambda s: s.subject, subject)
    by_discipline = _group(samples, lambda s: info(s, "discipline"))
    # a discipline whose every request failed has no acc
    present = {d: acc for d in disciplines if d in by_discipline
               and (acc := by_discipline[d].acc) is not None}
    table_average = sum(present.values()) / len(present) if present else None
    return MCQMetrics.made({
        "micro": _answered(samples),
        "macro": _macro(by_subject),
        "discipline_average": table_average,
        "by_discipline": {d: by_discipline[d] for d in present},
        "by_level": _group(samples, lambda s: s.level or info(s, "level")),
        "by_year": _group(samples, lambda s: _year_group(s.year, year_floor)),
        **({"by_year_ungrouped": _group(samples, lambda s: s.year)}
           if year_floor is not None else {}),
        "by_subject": by_subject,
    })
