"""The multiple-choice task: choose shots, build requests, extract answers, score samples."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..backends.base import Generate, Prompt, Request, Response, ScoreNext
from ..data.catalog import TaskSpec
from ..data.items import MCQItem
from ..errors import LocalevalError
from . import extract
from .prompts import CHAT_MODES, STYLES, PromptConfig, build_prompt

METHODS = ("likelihood", "generation")


@dataclass(frozen=True)
class MCQConfig:
    method: str = "likelihood"
    prompt: PromptConfig = PromptConfig()
    max_tokens: int | None = None  # generation budget; default 16 direct, 1024 CoT

    def __post_init__(self):
        if self.method not in METHODS:
            raise LocalevalError(f"unknown --method {self.method!r}; use one of {', '.join(METHODS)}")
        if self.prompt.style not in STYLES:
            raise LocalevalError(f"unknown --prompt-style {self.prompt.style!r}; use one of "
                                 f"{', '.join(STYLES)}")
        if self.prompt.chat not in CHAT_MODES:
            raise LocalevalError(f"unknown --chat mode {self.prompt.chat!r}; use one of "
                                 f"{', '.join(CHAT_MODES)}")
        if not 0 <= self.prompt.shots <= 5:
            raise LocalevalError(f"--shots must be 0 to 5, not {self.prompt.shots}")
        if self.prompt.cot and self.method == "likelihood":
            raise LocalevalError("--cot needs --method generation: the answer comes after the "
                                 "reasoning, so there is no single position to score")
        if self.prompt.cot and self.prompt.style != "tmlu":
            raise LocalevalError("--cot uses the TMLU paper's CoT format; use --prompt-style tmlu")

    @property
    def generation_budget(self) -> int:
        return self.max_tokens or (1024 if self.prompt.cot else 16)


@dataclass
class Planned:
    item: MCQItem
    prompt: Prompt
    n_shots: int
    request: Request


def plan(task: TaskSpec, subject: str, dev: list[MCQItem], test: list[MCQItem],
         config: MCQConfig, count_tokens: Callable[[Prompt], int] | None,
         max_context: int | None) -> list[Planned]:
    """Requests for one subject. Shots are the first k dev items, in order (as the TMLU code and
    lm-evaluation-harness's first_n sampler take them). When a prompt does not fit the model's
    context (minus the generation budget), shots are dropped from the end until it does, and the
    number used is recorded per question."""
    k = config.prompt.shots
    if k > len(dev):
        raise LocalevalError(
            f"subject {subject!r} has {len(dev)} dev (few-shot) questions but --shots is {k}; "
            "pass --shots 0 or provide a dev split")
    if config.prompt.cot and any(not s.explanation for s in dev[:k]):
        raise LocalevalError(f"subject {subject!r}: --cot needs an explanation for every dev "
                             "question used as a shot")
    name = task.subjects[subject].name if subject in task.subjects else subject
    budget = (config.generation_budget if config.method == "generation" else 1)
    out = []
    for item in test:
        n = k
        prompt = build_prompt(item, dev[:n], name, config.prompt)
        if count_tokens and max_context and _may_not_fit(prompt, budget, max_context):
            # a server may not count tokens (None): then no trimming
            while n > 0 and (count_tokens(prompt) or 0) + budget > max_context:
                n -= 1
                prompt = build_prompt(item, dev[:n], name, config.prompt)
        if config.method == "likelihood":
            request: Request = ScoreNext(prompt, config.prompt.candidates(item))
        else:
            stop = ("問題：",) if config.prompt.cot else ("\n\n", "問題：")
            request = Generate(prompt, config.generation_budget, stop)
        out.append(Planned(item, prompt, n, request))
    return out


def _may_not_fit(prompt: Prompt, budget: int, max_context: int) -> bool:
    """False when the prompt surely fits, so the (possibly remote) token count can be skipped:
    byte-level tokenizers never make more tokens than UTF-8 bytes; the margin covers chat
    templates and tokenizers that are not byte-level."""
    texts = [prompt] if isinstance(prompt, str) else [m["content"] for m in prompt]
    upper = sum(len(t.encode()) for t in texts) * 1.1 + 64 * len(texts)
    return upper + budget > max_context


def score(planned: Planned, response: Response, config: MCQConfig) -> dict:
    """One sample record (a line of samples.jsonl). ``pred`` is None, with ``error``, when no
    answer could be extracted; such a sample counts as wrong."""
    item = planned.item
    record = {
        "id": item.id,
        "subject": item.subject,
        "prompt": planned.prompt,
        "n_shots": planned.n_shots,
        "gold": item.answer,
    }
    pred, error = None, response.error
    if error is None and config.method == "likelihood":
        letters = dict(zip(config.prompt.candidates(item), item.letters))
        record["logprobs"] = {letters[c]: v for c, v in response.logprobs.items()}
        pred = extract.from_logprobs(response.logprobs, item.letters)
    elif error is None:
        record["output"] = response.text
        fn = extract.from_cot_text if config.prompt.cot else extract.from_direct_text
        pred, error = fn(response.text or "", item.letters)
    record["pred"] = pred
    record["correct"] = pred == item.answer
    if error:
        record["error"] = error
    for key in ("year", "level"):
        if key in item.metadata:
            record[key] = item.metadata[key]
    return record
