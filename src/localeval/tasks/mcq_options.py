"""The multiple-choice task's options: :class:`MCQOptions` as a user gives them (declared once:
the command line's flags and ``evaluate``'s documentation come from it) and :class:`MCQConfig`,
the same options checked and resolved (defaults that depend on other options)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

# the choices results.json records too, declared once (light, as --help imports these options)
from ..choices import Extract as Extract
from ..choices import LmEvalChoices as LmEvalChoices
from ..choices import Method as Method
from ..choices import StopAt as StopAt
from ..errors import LocalevalError
from .options import TaskOptions, hub_or_path, option
from .prompt_styles import PROMPT_STYLES, PromptConfig
from .prompts import ChatMode


@dataclass(frozen=True)
class MCQOptions(TaskOptions):
    """Multiple choice (tmlu, cmmlu, tmmluplus, or any --data folder)."""

    data: str | Path | None = option(None, "local folder or file instead of the Hugging Face "
                                     "Hub")
    limit: int | None = option(None, "first N test questions per subject", type=int)
    dataset_revision: str | None = option(None, "dataset revision on the Hub (branch, tag, "
                                          "commit)")
    subjects: list[str] | None = option(None, "comma-separated subject ids (default: all)")
    shots: int = option(5, "few-shot examples per question", type=int)
    method: Method = option("likelihood", "likelihood or generation")
    cot: bool = option(False, "chain-of-thought (needs --method generation)",
                       action="store_true")
    prompt_style: str | None = option(
        None, "tmlu (the TMLU paper's) or lm-eval (the CMMLU and TMMLU+ authors', as "
        "lm-evaluation-harness has them); default: the task's own (tmlu for tmlu and custom "
        "data, lm-eval for cmmlu and tmmluplus)")
    chat: ChatMode = option(
        "none", "none (a plain prompt), single (few-shot in one user turn, the answer cue as an "
        "assistant prefill), multi (one turn per shot), or api (for chat-only servers; "
        "--prompt-style tmlu with --method generation: MiuLab's openai_template layout, the "
        "answer cue at the end of the user message, then an empty assistant message); the chat "
        "modes use the model's chat template")
    system: str | None = option(None, "system prompt (with --chat) or text before the prompt")
    max_tokens: int | None = option(None, "generation budget (default 128 with the TMLU rules; "
                                    "with --extract strict 16, or 1024 with --cot)", type=int)
    extract: Extract | None = option(
        None, "how a generated answer becomes a letter: tmlu (the TMLU code's rules; default "
        "for --prompt-style tmlu) or strict (the first character must be the letter; CoT: the "
        "last final-answer statement; default for lm-eval)", rescorable=True)

    stop_at: StopAt | None = option(
        None, "where --method generation stops: question (at 問題：, the model starting a new "
        "question: MiuLab's vLLM path; saves tokens, and a letter in a question the model "
        "makes up is not read) or budget (--max-tokens alone: MiuLab's OpenAI_LM.query); "
        "default: budget with --chat api and the TMLU rules, question otherwise")

    max_length: int | None = option(
        None, "--method likelihood with the tmlu style: cut the prompt from the left to its last "
        "N - 1 tokens before the letter, as MiuLab's encode_pair does with --max_length N "
        "(without it MiuLab cuts to the model's generation_config.json max_length, 20 unless "
        "the model sets one: give that number); local backends (hf:, vllm:) only; default: "
        "nothing cut, a prompt over the context fails", type=int, metavar="N")

    reduce_few_shot: bool = option(
        False, "leave out few-shot examples that do not fit the model's context: tmlu style "
        "skips each one that does not fit (MiuLab's --reduce_few_shot), lm-eval style drops "
        "them from the end; default: every shot, no cut (MiuLab's default on vLLM), and a "
        "prompt over the context fails", action="store_true")

    chat_special_tokens: bool = option(
        True, "with --chat single, --method generation and the tmlu style, tokenise the rendered "
        "chat text with the template's special tokens only (default: the tokenizer's added too, "
        "as MiuLab's vLLM path does: two BOS where the template holds one)",
        flag="--no-chat-special-tokens", action="store_false")

    lm_eval_choices: LmEvalChoices = option(
        "fixed", "--prompt-style lm-eval on tmlu: the letters scored are each subject's fixed "
        "list (fixed: lm-eval's doc_to_choice, A-D or A-E) or the question's own options (own)")

    permute_options: int = option(
        1, "robustness: ask each question again in K cyclic shifts of its options (K equal to "
        "the number of options puts each option in each position once) and report accuracy "
        "mean and std over the orders and the share answered with the same option every time",
        type=int, metavar="K")
    repeats: int = option(
        1, "robustness, --method generation: N sampled draws per question (the model's own "
        "sampling, seeded) and accuracy mean, std and 95% interval over the draws", type=int,
        metavar="N")
    seed: int | None = option(
        None, "seed of the --repeats draws: the same seed, the same draws (hf:, vllm:; sent as "
        "each draw's seed to a server); default: each draw seeded by its prompt and number",
        type=int, unset_unrecorded=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.limit is not None and self.limit < 1:
            raise LocalevalError(f"--limit must be at least 1, not {self.limit}")
        if self.seed is not None and self.repeats < 2:
            raise LocalevalError("--seed seeds the sampled draws of --repeats N (N > 1, with "
                                 "--method generation); this run draws nothing")
        if not 1 <= self.permute_options <= 6:
            raise LocalevalError(f"--permute-options must be 1 to 6 (the most options a "
                                 f"question has), not {self.permute_options}")
        if self.repeats < 1:
            raise LocalevalError(f"--repeats must be at least 1, not {self.repeats}")
        if self.repeats > 1 and self.method != "generation":
            raise LocalevalError("--repeats draws sampled answers: it needs --method generation "
                                 "(likelihood reads one distribution, the same every time)")
        if not 0 <= self.shots <= 5:
            raise LocalevalError(f"--shots must be 0 to 5, not {self.shots}")
        if self.cot and self.method == "likelihood":
            raise LocalevalError("--cot needs --method generation: the answer comes after the "
                                 "reasoning, so there is no single position to score")
        if self.max_length is not None and self.method != "likelihood":
            raise LocalevalError("--max-length cuts the prompt MiuLab's likelihood path scores: "
                                 "it needs --method likelihood")
        if self.max_length is not None and self.max_length < 2:
            raise LocalevalError(f"--max-length must be at least 2 (the letter's token and one "
                                 f"before it), not {self.max_length}")
        if self.stop_at is not None and self.method != "generation":
            raise LocalevalError("--stop-at says where generation stops: it needs --method "
                                 "generation")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise LocalevalError(f"--max-tokens must be at least 1, not {self.max_tokens}")

    @classmethod
    def recorded(cls, config: Mapping[str, Any], results: Mapping[str, Any]) -> dict[str, Any]:
        """config.json (``MCQTask.describe``) nests the prompt's options under ``prompt`` and
        records the generation budget and extraction as run (resolved): they are kept for
        generation, so the requests key the cache as they did."""
        prompt = config.get("prompt") or {}
        options = {"data": hub_or_path(config.get("data")),
                   "dataset_revision": config.get("dataset_revision"),
                   "subjects": config.get("subjects"), "limit": config.get("limit"),
                   "method": config.get("method"), "prompt_style": prompt.get("style"),
                   "shots": prompt.get("shots", 5), "cot": prompt.get("cot", False),
                   "chat": prompt.get("chat", "none"), "system": prompt.get("system"),
                   "lm_eval_choices": prompt.get("lm_eval_choices", "fixed"),
                   "chat_special_tokens": config.get("chat_special_tokens", True),
                   "permute_options": config.get("permute_options", 1),
                   "repeats": config.get("repeats", 1),
                   "max_length": config.get("max_length"),
                   "reduce_few_shot": config.get("reduce_few_shot", False),
                   **({"seed": config["seed"]} if "seed" in config else {})}  # when given
        if config.get("method") == "generation":
            # a folder from before issue 50 stopped every generation at 問題：
            options.update(max_tokens=config.get("max_tokens"), extract=config.get("extract"),
                           stop_at=config.get("stop_at", "question"))
        return options

    kind = "mcq"
    always_named = ("shots", "method", "cot")
    # config.json's ``prompt`` block: option -> its key there
    PROMPT_KEYS: ClassVar[Mapping[str, str]] = {
        "prompt_style": "style", "shots": "shots", "cot": "cot", "chat": "chat",
        "system": "system", "lm_eval_choices": "lm_eval_choices"}

    def named(self) -> list[str]:
        """Its shots and method ("5-shot likelihood", "0-shot CoT")."""
        return [f"{self.shots}-shot {'CoT' if self.cot else self.method}"]

    def resolved(self, task: str) -> dict[str, Any]:
        """The prompt style, generation budget, extraction and stop as a run resolves them
        (as ``MCQConfig`` does): for a generation run only."""
        from ..data.catalog import default_prompt_style

        config = MCQConfig.of(self, task, default_prompt_style(task))
        generation = self.method == "generation"
        return {**super().resolved(task), "prompt_style": config.prompt.style,
                "max_tokens": config.generation_budget if generation else None,
                "extract": config.extraction if generation else None,
                "stop_at": config.stops_at if generation else None}

    @classmethod
    def whole(cls, name: str, task: str) -> tuple[Any, ...] | None:
        """A built-in dataset's subjects."""
        from ..data.catalog import BUILTIN_TASKS

        spec = BUILTIN_TASKS.get(task)
        return tuple(spec.subjects) if name == "subjects" and spec else None

    def record(self, names: frozenset[str], dataset: str | None = None) -> dict[str, Any]:
        """The prompt's options under ``prompt`` with the dataset it is of; a generation's
        budget, extraction and stop as the run resolved them (null for likelihood, which has
        none); ``permute_options``, ``repeats`` and ``seed`` only when asked for, so the
        folders of runs without them keep their settings (a rerun compares them)."""
        flat = super().record(names, dataset)
        prompt = {key: flat.pop(name) for name, key in self.PROMPT_KEYS.items() if name in flat}
        if dataset is not None:
            prompt["task"] = dataset
        if "method" in flat:
            generation = self.method == "generation"
            flat.update({name: getattr(self, name) if generation else None
                         for name in ("max_tokens", "extract", "stop_at")})
        for name, unasked in (("permute_options", 1), ("repeats", 1), ("seed", None)):
            if flat.get(name, unasked) == unasked:
                flat.pop(name, None)
        return {**flat, "prompt": prompt}

    @classmethod
    def rescore_problem(cls, recorded: Mapping[str, Any], name: str) -> str | None:
        if recorded.get("reduce_few_shot"):
            return ("rescore cannot re-plan a run made with --reduce-few-shot: which shots fit "
                    "depended on the model's tokenizer, which rescore never loads")
        if name == "extract" and recorded.get("method") != "generation":
            return (f"--extract reads generated answers, and this run used --method "
                    f"{recorded.get('method')}: there is no text to extract from")
        return None


@dataclass(frozen=True)
class MCQConfig:
    """The options as a run of one dataset resolves them: the prompt style (its default
    depends on the dataset), the generation budget and the extraction rule. Each option was
    checked in :class:`MCQOptions`; what needs the style resolved is checked here."""

    method: Method = "likelihood"
    prompt: PromptConfig = PromptConfig()
    max_tokens: int | None = None  # generation budget; see generation_budget
    extract: Extract | None = None  # None: the prompt style's default_extraction
    stop_at: StopAt | None = None  # None: see stops_at
    max_length: int | None = None  # see MCQOptions.max_length
    # MiuLab tmlu_eval.py: format_problem budgets shots only with --reduce_few_shot (off by
    # default), and its vLLM path (HFLM_vLLM.generate) cuts nothing
    reduce_few_shot: bool = False
    chat_special_tokens: bool = True  # see MCQOptions.chat_special_tokens

    @classmethod
    def of(cls, options: MCQOptions, dataset: str, default_style: str) -> MCQConfig:
        """The config of a run of ``dataset`` with ``options``."""
        o = options
        return cls(method=o.method, max_tokens=o.max_tokens, extract=o.extract,
                   stop_at=o.stop_at, max_length=o.max_length,
                   reduce_few_shot=o.reduce_few_shot,
                   chat_special_tokens=o.chat_special_tokens,
                   prompt=PromptConfig(style=o.prompt_style or default_style, shots=o.shots,
                                       cot=o.cot, chat=o.chat, system=o.system, task=dataset,
                                       lm_eval_choices=o.lm_eval_choices))

    def __post_init__(self) -> None:
        if self.prompt.style not in PROMPT_STYLES:
            raise LocalevalError(f"unknown --prompt-style {self.prompt.style!r}; use one of "
                                 f"{', '.join(PROMPT_STYLES)}")
        if self.prompt.cot and not self.prompt.kind.supports_cot:
            raise LocalevalError("--cot uses the TMLU paper's CoT format; use --prompt-style "
                                 + " or ".join(n for n, s in PROMPT_STYLES.items()
                                               if s.supports_cot))
        _check_api_layout(self.prompt, self.method)
        if self.max_length is not None and self.prompt.style != "tmlu":
            raise LocalevalError("--max-length is MiuLab's cut (the TMLU code's likelihood "
                                 "path): use it with --prompt-style tmlu")

    @property
    def extraction(self) -> str:
        return self.extract or self.prompt.kind.default_extraction

    @property
    def generation_budget(self) -> int:
        """--max-tokens, else 128 with the TMLU rules (MiuLab/TMLU tmlu_eval.py --max_tokens
        default), else 16 direct and 1024 CoT with the strict rules."""
        if self.max_tokens:
            return self.max_tokens
        if self.extraction == "tmlu":
            return 128
        return 1024 if self.prompt.cot else 16

    @property
    def stops_at(self) -> StopAt:
        """--stop-at, else budget for --chat api with the TMLU rules (MiuLab/TMLU model.py
        OpenAI_LM.query sends no stop; utils.py check_ans reads the whole reply), else question
        (model.py HFLM_vLLM: SamplingParams(stop=['問題：']); our strict rules too)."""
        if self.stop_at is not None:
            return self.stop_at
        return "budget" if self.prompt.chat == "api" and self.extraction == "tmlu" else "question"

    @property
    def stop(self) -> tuple[str, ...]:
        """The stop strings: 問題： where generation stops at a new question (:attr:`stops_at`);
        the strict direct rule also stops at a blank line."""
        question = ("問題：",) if self.stops_at == "question" else ()
        if self.extraction == "tmlu" or self.prompt.cot:
            return question
        return ("\n\n", *question)


def _check_api_layout(prompt: PromptConfig, method: str) -> None:
    """``--chat api`` is the TMLU code's layout for API models (MiuLab/TMLU template.py
    ``openai_template``); it is refused with the lm-eval style, and with likelihood: the TMLU
    code only generates from API models (tmlu_eval.py, openai branch), and its likelihood path
    (model.py ``HFLM_transformers``) scores the letter after a prefilled cue, our --chat single."""
    if prompt.chat != "api":
        return
    if not prompt.kind.supports_api_layout:
        raise LocalevalError("--chat api is the TMLU code's layout for API models (the answer "
                             "cue ends the user message); use it with --prompt-style tmlu, or "
                             "use --chat single with lm-eval")
    if method == "likelihood":
        raise LocalevalError("--chat api needs --method generation: the TMLU code uses this "
                             "layout only to generate, and a letter scored at the start of an "
                             "empty assistant turn is not read after 正確答案：( as its "
                             "likelihood path reads it; for likelihood use --chat single")
