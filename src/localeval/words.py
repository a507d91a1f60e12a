"""Small words that messages get wrong when a number or a name is put in them (issue 69:
"1 more tables", "1 countries", "a mcq run"). No imports, so any message may use them."""

from __future__ import annotations

# initialisms read letter by letter whose first letter sounds like a vowel ("an mcq run")
_SAID_AS_LETTERS = {"mcq", "llm", "hf", "rlhf", "sql", "sft"}


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """``n`` and its noun: "1 country", "3 countries" (``plural``: where an "s" is not it)."""
    return f"{n} {singular if n == 1 else plural or singular + 's'}"


def with_article(word: str) -> str:
    """``word`` after "a" or "an" as it is read: "a safety", "an mcq", "an llm-safety"."""
    head = word.split("-")[0].lower()
    an = head[:1] in tuple("aeiou") or head in _SAID_AS_LETTERS
    return f"{'an' if an else 'a'} {word}"
