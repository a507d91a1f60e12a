"""Typed records the tasks consume. Validated on construction, so a bad row never gets further."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

LETTERS = "ABCDEF"


@dataclass(frozen=True)
class MCQItem:
    """One multiple-choice question.

    ``options`` holds 2–6 option texts labelled A, B, … in order; ``answer`` is the gold letter.
    ``metadata`` carries whatever else the source has (year, level, discipline, source exam).
    """

    id: str
    subject: str
    question: str
    options: tuple[str, ...]
    answer: str
    explanation: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Problems are raised as (field, message) so the loader can add file and row.
        problem = validate_mcq(self.question, self.options, self.answer)
        if problem:
            raise ValueError(*problem)

    @property
    def letters(self) -> str:
        return LETTERS[: len(self.options)]


def validate_mcq(question: str, options: tuple[str, ...], answer: str) -> tuple[str, str] | None:
    """Return ``(field, problem)`` for the first thing wrong with a question, or None."""
    if not isinstance(question, str) or not question.strip():
        return ("question", "the question is empty")
    if not 2 <= len(options) <= len(LETTERS):
        return ("options", f"{len(options)} options; a question needs 2 to {len(LETTERS)}")
    for letter, text in zip(LETTERS, options):
        if not isinstance(text, str) or not text.strip():
            return (letter, f"option {letter} is empty")
    if answer not in LETTERS[: len(options)]:
        return ("answer", f"answer {answer!r} is not one of the options "
                          f"{', '.join(LETTERS[: len(options)])}")
    return None
