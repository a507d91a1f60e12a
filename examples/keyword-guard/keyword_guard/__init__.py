"""A guard that needs no model: P(harmful) from the listed words a text contains."""

import re

from localeval.guards import Conversation, Guard, GuardVerdict


class KeywordGuard(Guard):
    name = "keyword-guard"
    template_source = "keyword_guard's word list"
    verdict_position = "none: the words found in the text"
    model = "none:keyword-guard"  # no --model; runs are named "keyword-guard"

    # each keyword argument is a --guard-option, parsed by its annotation
    def __init__(self, words: str = "fake,insult,mock,poison", per_word: float = 0.5):
        self.words = [w.strip().lower() for w in words.split(",") if w.strip()]
        if not self.words or not 0 < per_word <= 1:
            raise ValueError("words must name a word and per_word be in (0, 1]")
        self.per_word = per_word

    def classify(self, conversations, execute):
        verdicts = []
        for c in conversations:  # a response is judged when there is one, else the prompt
            text = (c.response if c.response is not None else c.prompt).lower()
            if not text.strip():
                verdicts.append(GuardVerdict(None, "empty text"))  # a failure, never "safe"
                continue
            found = [w for w in self.words if re.search(rf"\b{re.escape(w)}", text)]
            verdicts.append(GuardVerdict(min(1.0, self.per_word * len(found)), raw=found))
        return verdicts
