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

Those two are ``--extract strict``. The TMLU paper's own rules (``--extract tmlu``, the default
of the ``tmlu`` prompt style) are :func:`tmlu_direct` and :func:`tmlu_cot`.
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


# ---------------------------------------------------------------- the TMLU paper's rules
# MiuLab/TMLU utils.py: find_choice, is_ans_format, check_ans, check_ans_cot. Those return
# "is it correct"; these return the letter the rules pick (which may not be an option of the
# question: then it is simply wrong, as there) and which rule picked it.
_PAREN_LETTER = re.compile(r"[A-F]\)")
_LETTER = re.compile(r"[A-F]")


def _find_choice(text: str) -> tuple[int, str]:
    """Position of the first 'X)' (X in A-F), else of the first capital A-F; -1 if none."""
    for pattern, rule in ((_PAREN_LETTER, "first 'X)'"), (_LETTER, "first capital A-F")):
        match = pattern.search(text)
        if match:
            return match.start(), rule
    return -1, ""


def _looks_like_answer(text: str) -> bool:
    """MiuLab's is_ans_format, in its order: a negation of 正確 first, then 正確, then A-E."""
    for phrase, verdict in (("不是正確答案", False), ("正確答案", True), ("不正確", False),
                            ("正確", True)):
        if phrase in text:
            return verdict
    return any(letter in text for letter in "ABCDE")


def tmlu_direct(text: str) -> tuple[str | None, str]:
    """check_ans: the first blank-line chunk if it looks like an answer, else the last chunk;
    in it the first 'X)', else the first capital A-F. Returns (letter or None, rule)."""
    chunks = text.strip().split("\n\n")
    where = "first chunk" if _looks_like_answer(chunks[0]) else "last chunk"
    chunk = chunks[0] if where == "first chunk" else chunks[-1]
    pos, rule = _find_choice(chunk)
    if pos < 0:
        return None, f"tmlu: no letter A-F in the {where}"
    return chunk[pos], f"tmlu: {where}, {rule}"


def tmlu_cot(text: str) -> tuple[str | None, str]:
    """check_ans_cot: cut at 問題：, take the last line that looks like an answer (joined with the
    lines after it), search from 正確答案 (or its start) for 'X)', else a capital A-F."""
    lines = text.strip().split("問題：")[0].strip().split("\n")
    found = next((i for i in range(len(lines) - 1, -1, -1) if _looks_like_answer(lines[i])), None)
    if found is None:
        return None, "tmlu-cot: no line looks like an answer"
    answer = "".join(lines[found:])
    start = max(answer.find("正確答案"), 0)
    pos, rule = _find_choice(answer[start:])
    if pos < 0:
        return None, "tmlu-cot: no letter A-F in the answer line"
    return answer[start + pos], f"tmlu-cot: last answer line, {rule}"
