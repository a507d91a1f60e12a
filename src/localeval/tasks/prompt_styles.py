"""A multiple-choice prompt style: one object that owns every decision a style makes.

What differs between the TMLU paper's format and lm-evaluation-harness's — the text of the
instruction, a shot and the query, the answer cue, where the instruction goes in a chat, the
letters and candidates scored, whether a likelihood prompt gets the tokenizer's special tokens,
how shots are dropped when a prompt does not fit, the default answer extraction, and which
options the style allows (CoT, the API chat layout) — is an attribute or a method here, never a
``style == "tmlu"`` branch elsewhere. A third style (a provider's own chat layout, say) is one
more subclass, registered with :func:`register_style`.

The texts of each style are documented in :mod:`.prompts`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..data.items import MCQItem

TMLU_TOPIC = "以下選擇題為出自臺灣的考題，答案為其中一個選項。"
TMLU_ANSWER_CUE = "\n正確答案：("
TMLU_COT_CUE = "\n讓我們一步一步思考。\n"

LM_EVAL_DESCRIPTION = {
    "cmmlu": "以下是关于{name}的单项选择题，请直接给出正确答案的选项。\n\n",
    "default": "以下為{name}的單選題，請提供正確答案的選項。\n\n",
}
LM_EVAL_ANSWER = {"cmmlu": "答案：", "default": "Answer:"}
# lm-eval 0.4.13 tasks/tmlu/default: the subjects whose doc_to_choice is A-E (every other
# tmlu_<subject>.yaml lists A-D)
LM_EVAL_TMLU_FIVE_CHOICES = frozenset({"AST_chemistry", "GSAT_biology", "GSAT_chemistry",
                                       "GSAT_earth_science"})

Fits = Callable[[list[int]], bool]


class PromptStyle:
    """The decisions of one prompt style. Subclasses set the attributes and write the texts."""

    name: str = ""
    title: str = ""  # how a notice names it: "the TMLU paper's"
    supports_cot: bool = False  # --cot is this style's format
    supports_api_layout: bool = False  # --chat api (the answer cue ends the user message)
    default_extraction: str = "strict"  # how a generated answer becomes a letter by default
    # a likelihood prompt tokenised with the tokenizer's special tokens (BOS)
    likelihood_special_tokens: bool = True
    # --chat single generation tokenised with special tokens, as MiuLab's vLLM path does
    chat_special_tokens: bool = False
    instruction_in_system: bool = False  # with a chat layout, the instruction is the system turn

    def head(self, subject_name: str, config: PromptConfig) -> str:
        """The instruction before the shots."""
        raise NotImplementedError

    def question(self, item: MCQItem, config: PromptConfig) -> str:
        """A question with its options, up to (not including) the answer cue."""
        raise NotImplementedError

    def shot(self, item: MCQItem, config: PromptConfig) -> str:
        """A demonstration: its question and its answer."""
        raise NotImplementedError

    def cue(self, config: PromptConfig) -> str:
        """What follows the query so that the next token is the answer."""
        return ""

    def letters(self, item: MCQItem, config: PromptConfig) -> str:
        """The option letters scored for ``item``."""
        return item.letters

    def candidates(self, item: MCQItem, config: PromptConfig) -> tuple[str, ...]:
        """The continuations scored at the answer position."""
        return tuple(self.letters(item, config))

    def keep_shots(self, n: int, fits: Fits) -> list[int]:
        """Which of ``n`` shots a prompt keeps when not all fit (``--reduce-few-shot``):
        by default the first ones, dropped from the end."""
        while n > 0 and not fits(list(range(n))):
            n -= 1
        return list(range(n))


class TmluStyle(PromptStyle):
    """The TMLU paper's format (MiuLab/TMLU template.py, tmlu_eval.py ``format_problem``)."""

    name, title = "tmlu", "the TMLU paper's"
    supports_cot = supports_api_layout = True
    default_extraction = "tmlu"
    # MiuLab/TMLU model.py HFLM_transformers.encode / encode_pair tokenise without special
    # tokens; its vLLM chat path (HFLM_vLLM.generate) with them
    likelihood_special_tokens = False
    chat_special_tokens = True

    def head(self, subject_name: str, config: PromptConfig) -> str:
        return TMLU_TOPIC + "\n\n"

    def question(self, item: MCQItem, config: PromptConfig) -> str:
        # The TMLU code collapses blank lines inside questions and strips them.
        text = item.question.replace("\n\n", "\n").strip()
        options = "\n".join(f"({letter}) {option}" for letter, option in
                            zip(item.letters, item.options))
        return f"問題：{text}\n{options.strip()}"

    def shot(self, item: MCQItem, config: PromptConfig) -> str:
        if config.cot:
            return f"{self.question(item, config)}{TMLU_COT_CUE}" \
                   f"{(item.explanation or '').strip()}\n正確答案：({item.answer})"
        return f"{self.question(item, config)}{TMLU_ANSWER_CUE}{item.answer})"

    def cue(self, config: PromptConfig) -> str:
        return TMLU_COT_CUE if config.cot else TMLU_ANSWER_CUE

    def keep_shots(self, n: int, fits: Fits) -> list[int]:
        """MiuLab's --reduce_few_shot: each shot in order is kept if the prompt with it still
        fits."""
        used: list[int] = []
        for i in range(n):
            if fits(used + [i]):
                used.append(i)
        return used


class LmEvalStyle(PromptStyle):
    """lm-evaluation-harness's task formats (the cmmlu, tmmluplus and tmlu YAMLs)."""

    name, title = "lm-eval", "lm-evaluation-harness's"
    instruction_in_system = True  # lm_eval/api/task.py fewshot_context with a chat template

    @staticmethod
    def _key(config: PromptConfig) -> str:
        return "cmmlu" if config.task == "cmmlu" else "default"

    def head(self, subject_name: str, config: PromptConfig) -> str:
        return LM_EVAL_DESCRIPTION[self._key(config)].format(name=subject_name)

    def question(self, item: MCQItem, config: PromptConfig) -> str:
        options = "".join(f"\n{letter}. {text}" for letter, text in
                          zip(item.letters, item.options))
        return f"{item.question.strip()}{options}\n{LM_EVAL_ANSWER[self._key(config)]}"

    def shot(self, item: MCQItem, config: PromptConfig) -> str:
        return f"{self.question(item, config)} {item.answer}"

    def letters(self, item: MCQItem, config: PromptConfig) -> str:
        """lm-eval 0.4.13 ``tasks/tmlu/default/tmlu_<subject>.yaml`` gives every tmlu subject a
        fixed ``doc_to_choice`` (A-D; A-E for four subjects), whatever the question's own
        options (a gold letter outside it can never be predicted, lm-eval's -100)."""
        if config.task == "tmlu" and config.lm_eval_choices == "fixed":
            return "ABCDE" if item.subject in LM_EVAL_TMLU_FIVE_CHOICES else "ABCD"
        return item.letters

    def candidates(self, item: MCQItem, config: PromptConfig) -> tuple[str, ...]:
        """lm-eval's target delimiter " " before each letter; "" with a chat template."""
        space = " " if config.chat == "none" else ""
        return tuple(space + letter for letter in self.letters(item, config))


PROMPT_STYLES: dict[str, PromptStyle] = {}


@dataclass(frozen=True)
class PromptConfig:
    style: str = "tmlu"  # a name in PROMPT_STYLES (recorded as text in the run's identity)
    shots: int = 5
    cot: bool = False
    chat: str = "none"
    system: str | None = None
    task: str = "tmlu"  # which lm-eval task format to follow
    # lm-eval style on tmlu: each subject's fixed doc_to_choice ("fixed", lm-eval's) or the
    # question's own option letters ("own")
    lm_eval_choices: str = "fixed"

    @property
    def kind(self) -> PromptStyle:
        """The style object that makes this config's decisions."""
        return PROMPT_STYLES[self.style]

    def letters(self, item: MCQItem) -> str:
        """The option letters scored for ``item`` (:meth:`PromptStyle.letters`)."""
        return self.kind.letters(item, self)

    def candidates(self, item: MCQItem) -> tuple[str, ...]:
        """The continuations scored at the answer position."""
        return self.kind.candidates(item, self)



def register_style(style: PromptStyle) -> PromptStyle:
    """Make ``style`` available as ``--prompt-style <style.name>``."""
    PROMPT_STYLES[style.name] = style
    return style


register_style(TmluStyle())
register_style(LmEvalStyle())
