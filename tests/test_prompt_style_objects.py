"""A prompt style is one object (issue 31 item 1): a third style — here a provider's English
chat layout — is one subclass registered in this file alone, and a run takes it by name."""

from __future__ import annotations

import json

import pytest

from localeval import evaluate
from localeval.backends.base import NextLogprobs
from localeval.data.items import MCQItem
from localeval.tasks.prompt_styles import PROMPT_STYLES, LmEvalStyle, PromptStyle, TmluStyle
from localeval.tasks.prompts import PromptConfig, build_prompt


class EnglishExam(PromptStyle):
    """A provider's layout: an English instruction, "Answer: X" shots, letters in brackets."""

    name, title = "english-exam", "an English exam's"
    instruction_in_system = True

    def head(self, subject_name, config):
        return f"Answer the {subject_name} question with one letter.\n\n"

    def question(self, item, config):
        options = "\n".join(f"[{letter}] {text}" for letter, text in
                            zip(item.letters, item.options))
        return f"{item.question}\n{options}"

    def shot(self, item, config):
        return f"{self.question(item, config)}\nAnswer: {item.answer}"

    def cue(self, config):
        return "\nAnswer:"

    def candidates(self, item, config):
        return tuple(" " + letter for letter in self.letters(item, config))


@pytest.fixture
def english_exam(monkeypatch):
    monkeypatch.setitem(PROMPT_STYLES, EnglishExam.name, EnglishExam())


ITEM = MCQItem(id="1", subject="law", question="Q?", options=("yes", "no"), answer="B")


def test_a_third_style_builds_its_prompt(english_exam):
    config = PromptConfig(style="english-exam", shots=1)
    assert build_prompt(ITEM, [ITEM], "law", config) == (
        "Answer the law question with one letter.\n\nQ?\n[A] yes\n[B] no\nAnswer: B\n\n"
        "Q?\n[A] yes\n[B] no\nAnswer:")
    chat = build_prompt(ITEM, [], "law", PromptConfig(style="english-exam", chat="single"))
    assert chat[0] == {"role": "system", "content": "Answer the law question with one "
                                                    "letter.\n\n"}
    assert config.candidates(ITEM) == (" A", " B")


class Prompts:
    """Answers B and keeps every prompt it was sent."""

    identity = {"backend": "recording", "model": "recording"}

    def __init__(self):
        self.sent = []

    def max_context(self):
        return None

    def count_tokens(self, prompt):
        return 0

    def run(self, requests, progress=None):
        self.sent += requests
        return [NextLogprobs(logprobs={c: 0.0 if c.strip() == "B" else -5.0 for c in r.candidates})
                for r in requests]


def test_a_run_takes_the_third_style_by_name(english_exam, tmp_path):
    data = tmp_path / "exam.jsonl"
    data.write_text(json.dumps({"id": "1", "subject": "law", "question": "Q?", "A": "yes",
                                "B": "no", "answer": "B"}) + "\n", encoding="utf-8")
    model = Prompts()
    record = evaluate(task="my-exam", model=model, data=data, shots=0,
                      prompt_style="english-exam", output=tmp_path / "run", quiet=True)
    assert model.sent[0].prompt.endswith("[A] yes\n[B] no\nAnswer:")
    assert model.sent[0].candidates == (" A", " B")
    assert record.results.metrics.micro.acc == 1.0
    assert record.results.prompt_style == "english-exam"


def test_each_built_in_style_owns_its_decisions():
    tmlu, lm_eval = TmluStyle(), LmEvalStyle()
    assert (tmlu.default_extraction, lm_eval.default_extraction) == ("tmlu", "strict")
    assert tmlu.supports_cot and not lm_eval.supports_cot
    assert not tmlu.likelihood_special_tokens and lm_eval.likelihood_special_tokens
    fits_two = lambda used: len(used) <= 2 and 1 not in used  # noqa: E731 - shot 1 is too long
    assert tmlu.keep_shots(4, fits_two) == [0, 2]  # MiuLab's --reduce_few_shot: skip each
    assert lm_eval.keep_shots(4, fits_two) == [0]  # dropped from the end
