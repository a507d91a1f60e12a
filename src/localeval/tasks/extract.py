"""Turn a model's response into a predicted option letter, or say why there is none.

Likelihood: the letter whose candidate has the highest log-prob (ties go to the earlier letter,
as ``argmax`` does in lm-evaluation-harness and the TMLU code).

Generation, direct (strict, documented): after leading whitespace and opening brackets
(``(`` ``（`` ``[``), the first character must be an option letter of this question, and the
character after it must not be an ASCII letter or digit (so "Answer" or "A1" never counts).
We never search further into the text: a reply that does not start with its answer is wrong.

Generation, CoT: the text is cut at the next ``問題：`` (the model starting a new question, as in
the TMLU code), then the **last** final-answer statement wins: ``正確答案`` / ``答案`` /
``Answer``, an optional colon, optional bracket, then an option letter not followed by a letter.
"""

from __future__ import annotations

import re

OPENERS = " \t\r\n(（[【"
_FINAL = re.compile(r"(?:正確答案|正确答案|答案|[Aa]nswer)\s*(?:是|為|为|is)?\s*[:：]?\s*[(（\[【]?\s*"
                    r"([A-Fa-f])(?![A-Za-z0-9])")


def from_logprobs(logprobs: dict[str, float | None], letters: str) -> str:
    """``None`` (a candidate outside a server's top-k) ranks below every number."""
    values = [v if v is not None else float("-inf") for v in logprobs.values()]
    return letters[values.index(max(values))]


def from_direct_text(text: str, letters: str) -> tuple[str | None, str | None]:
    """Return (letter, None) or (None, reason)."""
    rest = text.lstrip(OPENERS)
    if rest and rest[0] in letters and not (len(rest) > 1 and rest[1].isascii()
                                            and rest[1].isalnum()):
        return rest[0], None
    return None, f"output does not start with an option letter ({', '.join(letters)})"


def from_cot_text(text: str, letters: str) -> tuple[str | None, str | None]:
    body = text.split("問題：")[0]
    found = [m.group(1).upper() for m in _FINAL.finditer(body)]
    if not found:
        return None, "no final-answer statement (正確答案/答案/Answer followed by a letter)"
    if found[-1] not in letters:
        return None, f"final answer {found[-1]} is not an option ({', '.join(letters)})"
    return found[-1], None
