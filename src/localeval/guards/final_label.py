"""Reasoning guards: the label a model writes at the end of its answer, after it has thought.

A reasoning model (GPT-OSS, or any chat model that thinks before it answers) does not write its
label as the first generated token, so reading the label distribution there reads the start of
its reasoning. The rule here, used by ``zero-shot`` with ``reasoning=true``, has two stages:

1. generate greedily on the guard's prompt, up to a budget of new tokens;
2. find the final label in the generated text (the last label word, with nothing after it but
   whitespace and punctuation) and score the label position: a ScoreNext on the prompt + the
   generated text before the label (as an assistant prefill), with the label candidates.

Upstream: panuthept/IRIS ``src/iris/model_wrappers/guard_models/llm_guard.py``,
``GPTOSS._complete``, which generates up to 1024 new tokens with ``output_scores`` and reads the
scores ``scores[-4]`` when the answer ends with "Harmful", else ``scores[-2]``. Those index the
generated positions from the end: the last step is the end-of-answer token, "Safe" is one token
(so its step is the 2nd from last) and "Harmful" three ("H", "arm", "ful": its first step is the
4th from last). We locate the label in the text instead and score the step that produced its
first token, which is the same position whenever the answer ends with the label followed by one
end token, and does not depend on how many tokens the tokenizer makes of the label and of what
follows it. Where the two differ: an answer that does not end with a label (reasoning cut by the
budget, a lowercase or missing label) is read by IRIS at ``scores[-2]`` anyway, a position that
holds no label; here it is a failed verdict, never safe. Trailing punctuation after the label
("Harmful.") is allowed here, where IRIS would read the wrong step.

The re-scored context is the generated *text*: a backend that drops special tokens when it
decodes (our hf backend decodes with ``skip_special_tokens=True``) loses markers such as
GPT-OSS's ``<|channel|>final<|message|>``, so the label position is scored after a re-tokenised
context that may differ from the one the model generated in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..backends.base import Failed, Message, Response, ScoreNext, text_of

NO_LABEL = "no final label"  # the start of the error string of an answer without one


@dataclass(frozen=True)
class FinalLabel:
    """Where the final label is: the generated text before it (trailing spaces removed), the
    spaces between that text and the label (moved to the candidates, so no prompt ends in a
    space), and the label the model wrote."""

    before: str
    space: str
    label: str


def find_final_label(text: str, labels: Sequence[str]) -> FinalLabel | None:
    """The last label word of ``text`` when nothing but whitespace and punctuation follows it;
    None when the text does not end with a label. Case-sensitive, as the prompt asks for
    'Safe' or 'Harmful' and IRIS's ``endswith("Harmful")`` is. No word boundary is needed before
    the label: a decoded GPT-OSS answer reads "...assistantfinalHarmful"."""
    words = "|".join(re.escape(label) for label in sorted(labels, key=len, reverse=True))
    match = re.search(rf"({words})[\W_]*\Z", text)
    if match is None:
        return None
    head = text[: match.start(1)]
    before = head.rstrip(" \t")
    return FinalLabel(before, head[len(before):], match.group(1))


def candidates(spot: FinalLabel, labels: Sequence[str]) -> tuple[str, ...]:
    """The labels as ScoreNext candidates at ``spot`` (with the spaces before the label)."""
    return tuple(spot.space + label for label in labels)


def label_request(messages: list[Message], spot: FinalLabel,
                  labels: Sequence[str]) -> ScoreNext:
    """ScoreNext at the label position: the guard's messages + the text before the label as an
    assistant prefill (none when the label came first: then it is the first-token request)."""
    prompt = list(messages)
    if spot.before:
        prompt.append({"role": "assistant", "content": spot.before})
    return ScoreNext(prompt, candidates(spot, labels))


def generation_problem(resp: Response, labels: Sequence[str], budget: int) -> str | None:
    """Why the reasoning stage gives no label position (None when it does)."""
    if isinstance(resp, Failed):
        return f"backend error in the reasoning stage: {resp.error}"
    text = text_of(resp)
    if text is None:
        return "the reasoning stage returned no text"
    if find_final_label(text, labels) is None:
        wanted = " or ".join(repr(label) for label in labels)
        return (f"{NO_LABEL}: the generated text does not end with {wanted} (budget "
                f"{budget} new tokens; raise reasoning_tokens if it was cut short); it ends "
                f"{text[-200:]!r}")
    return None
