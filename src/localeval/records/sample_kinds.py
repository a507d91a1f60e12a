"""What a safety sample judges, as types: its kind (a prompt or a response) and, for a response,
its context (judged with its prompt or without). Each owns the decisions that depend on it, so
the task, the analyses and the views ask it instead of comparing strings.

Both are ``StrEnum``: a sample's JSON keeps its ``"kind": "prompt"`` and ``"context":
"with_prompt"`` fields, and a value read back from JSON compares equal to its member.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class SampleKind(StrEnum):
    PROMPT = "prompt"
    RESPONSE = "response"

    @property
    def judges_response(self) -> bool:
        """The sample judges a model's response (and exists only where the item has one)."""
        return self is SampleKind.RESPONSE

    def raw_label(self, item: Any) -> str | None:
        """The item's gold label for this kind (``prompt_label`` or ``response_label``)."""
        label: str | None = getattr(item, f"{self.value}_label")
        return label

    def exists_for(self, item: Any) -> bool:
        """Whether ``item`` has something of this kind to judge."""
        return not self.judges_response or item.response is not None

    @property
    def table_order(self) -> int:
        """Prompts before responses in every table (the paper's order)."""
        return 0 if self is SampleKind.PROMPT else 1


class Context(StrEnum):
    WITH_PROMPT = "with_prompt"
    WITHOUT_PROMPT = "without_prompt"

    @property
    def shows_prompt(self) -> bool:
        """The guard sees the prompt beside the response."""
        return self is Context.WITH_PROMPT

    @property
    def suffix(self) -> str:
        """How a table names the context after the kind: "" or " (no prompt)"."""
        return "" if self.shows_prompt else " (no prompt)"


def task_name(kind: str, context: str) -> str:
    """A (kind, context) as a table names it: "prompt", "response", "response (no prompt)"."""
    return SampleKind(kind).value + Context(context).suffix
