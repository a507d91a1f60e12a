"""A guard that needs no model: P(harmful) from the listed words a text contains."""

import re
from dataclasses import dataclass

from localeval.guards import Guard, GuardOptions, GuardVerdict, option


@dataclass(frozen=True)
class KeywordOptions(GuardOptions):  # each field is a --guard-option, parsed by its type
    words: str = option("fake,insult,mock,poison", "comma-separated words that count")
    per_word: float = option(0.5, "P(harmful) each word found adds, in (0, 1]")

    def __post_init__(self):
        super().__post_init__()
        if not self.words.strip(",") or not 0 < self.per_word <= 1:
            raise ValueError("words must name a word and per_word be in (0, 1]")


class KeywordGuard(Guard):
    name = "keyword-guard"
    template_source = "keyword_guard's word list"
    verdict_position = "none: the words found in the text"
    model = "none:keyword-guard"  # no --model; runs are named "keyword-guard"
    Options = KeywordOptions

    def __init__(self, options: KeywordOptions | None = None):
        super().__init__(options)  # self.options: what it was made with, never changed
        self.words = [w.strip().lower() for w in self.options.words.split(",") if w.strip()]

    def classify(self, conversations, execute):
        verdicts = []
        for c in conversations:  # a response is judged when there is one, else the prompt
            text = (c.response if c.response is not None else c.prompt).lower()
            if not text.strip():
                verdicts.append(GuardVerdict(None, "empty text"))  # a failure, never "safe"
                continue
            found = [w for w in self.words if re.search(rf"\b{re.escape(w)}", text)]
            score = min(1.0, self.options.per_word * len(found))
            verdicts.append(GuardVerdict(score, raw=found))
        return verdicts
