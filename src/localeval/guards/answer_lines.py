"""Guards that answer in lines such as ``Harmful request: yes`` ... ``Harmful response: no``
(WildGuard, PolyGuard): the shared two-stage adapter."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..backends.base import (
    Failed,
    Generate,
    Prompt,
    Request,
    Response,
    ScoreNext,
    error_of,
    text_of,
)
from .base import Conversation, GuardVerdict, cause_of
from .staged import StagedGuard, binary_verdict


class AnswerLinesGuard(StagedGuard):
    """Guards that answer in lines such as ``Harmful request: yes`` ... ``Harmful response: no``
    (WildGuard, PolyGuard).

    Prompt classification: one ScoreNext after the prefill ``Harmful request:``.
    Response classification: the "Harmful response:" line comes after lines the model writes
    itself, so stage 0 generates greedily from ``Harmful request:`` up to ``Harmful response:``,
    stage 1 scores `` yes`` / `` no`` after the generated lines + ``Harmful response:``. The
    generated lines must match ``stage0_pattern``; otherwise the item gets no score.
    """

    stages = 2
    harmful, safe = " yes", " no"
    request_prefill = "Harmful request:"
    response_prefill = "Harmful response:"
    stage0_pattern: re.Pattern[str]  # full match of the text generated in stage 0
    max_tokens = 64

    def build(self, prompt: str, response: str | None, answer: str) -> Prompt:
        """The request prompt for (prompt, response) with ``answer`` as the start of the
        model's answer."""
        raise NotImplementedError

    def requests(self, conversation: Conversation,
                 earlier: Sequence[Response] = ()) -> list[Request]:
        prompt, response = conversation.prompt, conversation.response
        if not earlier:
            if response is None:
                return [ScoreNext(self.build(prompt, None, self.request_prefill),
                                  (self.harmful, self.safe))]
            return [Generate(self.build(prompt, response, self.request_prefill),
                             max_tokens=self.max_tokens, stop=(self.response_prefill,))]
        text = text_of(earlier[0]) if len(earlier) == 1 else None
        if response is None or text is None or self._stage0_problem(earlier[0]):
            return []
        answer = self.request_prefill + text + self.response_prefill
        return [ScoreNext(self.build(prompt, response, answer), (self.harmful, self.safe))]

    def _stage0_problem(self, resp: Response) -> str | None:
        if isinstance(resp, Failed):
            return f"backend error in the generation stage: {resp.error}"
        text = text_of(resp)
        if text is None:
            return "the generation stage returned no text"
        if not self.stage0_pattern.fullmatch(text):
            return (f"the model's answer lines before {self.response_prefill!r} are not in the "
                    f"expected format: {text!r}")
        return None

    def score(self, responses: Sequence[Response]) -> GuardVerdict:
        if len(responses) == 1 and text_of(responses[0]) is not None:
            problem = self._stage0_problem(responses[0])
            return GuardVerdict(None, problem or "the scoring stage was not run",
                                cause=cause_of(responses[0]))
        if len(responses) == 1 and isinstance(responses[0], Failed):
            # A failed stage 0 of response classification, or a failed prompt ScoreNext: both
            # carry the backend's message.
            return GuardVerdict(None, f"backend error: {error_of(responses[0])}",
                                cause=cause_of(responses[0]))
        if len(responses) not in (1, 2):
            return GuardVerdict(None, f"expected 1 or 2 responses, got {len(responses)}")
        return binary_verdict(responses, self.harmful, self.safe, expected=len(responses))
