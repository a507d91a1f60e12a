"""The multiple-choice task: load subjects, choose shots, build requests, extract answers, score
samples, aggregate accuracy."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..backends.base import (
    UNPROVEN,
    Backend,
    Failed,
    Generate,
    Generated,
    NextLogprobs,
    Prompt,
    Request,
    Response,
    ScoreNext,
    candidate_problem,
    with_defaults,
)
from ..backends.base import (
    Executor as Execute,
)
from ..data.catalog import BUILTIN_TASKS, TaskSpec, default_prompt_style
from ..data.items import MCQItem
from ..data.mcq_loaders import load_mcq_data
from ..errors import LocalevalError
from ..metrics.mcq import aggregate
from ..records.mcq import SCHEMA as MCQ_SCHEMA
from ..records.mcq import MCQResults
from ..records.samples import MCQSample
from . import extract, mcq_variants
from .base import MCQ_PROTOCOL, Task
from .benchmarks import benchmark_options, dataset_of
from .custom import announce_custom_task
from .mcq_options import MCQConfig, MCQOptions
from .mcq_variants import Planned
from .options import SpecParts
from .prompts import build_prompt


@dataclass(frozen=True)
class MCQData:
    """What loading found: the task's metadata, and (subject, dev, test) per subject."""

    spec: TaskSpec
    subjects: list[tuple[str, list[MCQItem], list[MCQItem]]]


def check_subject(subject: str, splits: dict[str, list[MCQItem]], config: MCQConfig,
                  source: str) -> None:
    """Every problem a subject's data can have for this config, before any model is loaded."""
    if "test" not in splits:
        raise LocalevalError(f"subject {subject!r} has no test split in {source}")
    dev, k = splits.get("dev", []), config.prompt.shots
    if k > len(dev):
        raise LocalevalError(
            f"subject {subject!r} has {len(dev)} dev (few-shot) questions but --shots is {k}; "
            "pass --shots 0 or provide a dev split")
    if config.prompt.cot and any(not s.explanation for s in dev[:k]):
        raise LocalevalError(f"subject {subject!r}: --cot needs an explanation for every dev "
                             f"question used as a shot, and {source} has none for some; pass "
                             "--shots 0 (zero-shot CoT) or use a dataset whose dev questions "
                             "have an 'explanation' column (TMLU has)")


def plan(task: TaskSpec, subject: str, dev: list[MCQItem], test: list[MCQItem],
         config: MCQConfig, count_tokens: Callable[[Prompt], int | None] | None,
         max_context: int | None) -> list[Planned]:
    """Requests for one subject (checked by :func:`check_subject`). Shots are the first k dev
    items, in order (as the TMLU code and lm-evaluation-harness's first_n sampler take them).
    By default every shot is kept and nothing is cut, as MiuLab/TMLU ``tmlu_eval.py`` does
    without ``--reduce_few_shot`` on its vLLM path (``HFLM_vLLM.generate``); a prompt over the
    context then fails as a request. With ``config.reduce_few_shot``, when a prompt does not fit
    the model's context (minus the generation budget), shots are left out: with the ``tmlu``
    style each shot that does not fit is skipped on its own and later, shorter ones are still
    tried (``format_problem`` with ``--reduce_few_shot``); with ``lm-eval`` shots are dropped
    from the end. What was used is recorded per question."""
    name = task.subjects[subject].name if subject in task.subjects else subject
    budget = (config.generation_budget if config.method == "generation" else 1)
    shots = dev[: config.prompt.shots]
    out = []
    for item in test:
        used = list(range(len(shots)))
        prompt = build_prompt(item, shots, name, config.prompt)
        if config.reduce_few_shot and count_tokens and max_context and \
                _may_not_fit(prompt, budget, max_context):
            # a server may not count tokens (None): then no trimming
            def fits(indices: list[int], item: MCQItem = item) -> bool:
                p = build_prompt(item, [shots[i] for i in indices], name, config.prompt)
                return (count_tokens(p) or 0) + budget <= max_context

            used = config.prompt.kind.keep_shots(len(shots), fits)
            prompt = build_prompt(item, [shots[i] for i in used], name, config.prompt)
        skipped = tuple(i for i in range(len(shots)) if i not in used)
        out.append(Planned(item, prompt, len(used), _request(item, prompt, config), skipped))
    return out


def _request(item: MCQItem, prompt: Prompt, config: MCQConfig) -> Request:
    if config.method == "likelihood":
        # the style says whether the tokenizer adds its special tokens (the TMLU code does not);
        # echo: a server may read the options from prompt + option echoed (--scoring)
        return ScoreNext(prompt, config.prompt.candidates(item),
                         add_special_tokens=config.prompt.kind.likelihood_special_tokens,
                         echo=True, max_length=config.max_length)
    # MiuLab/TMLU model.py HFLM_vLLM.generate with --apply_chat_template: the user turn + the
    # cue, rendered to text, which vLLM tokenises with special tokens (a template that holds
    # BOS gets a second one)
    miulab = (config.prompt.kind.chat_special_tokens and config.prompt.chat == "single"
              and config.chat_special_tokens)
    return Generate(prompt, config.generation_budget, config.stop,
                    add_special_tokens=True if miulab else None)


def _may_not_fit(prompt: Prompt, budget: int, max_context: int) -> bool:
    """False when the prompt surely fits, so the (possibly remote) token count can be skipped:
    byte-level tokenizers never make more tokens than UTF-8 bytes; the margin covers chat
    templates and tokenizers that are not byte-level."""
    texts = [prompt] if isinstance(prompt, str) else [m["content"] for m in prompt]
    upper = sum(len(t.encode()) for t in texts) * 1.1 + 64 * len(texts)
    return upper + budget > max_context


def score(planned: Planned, response: Response, config: MCQConfig) -> MCQSample:
    """One sample record (a line of samples.jsonl). ``pred`` is None, with ``error``, when no
    answer could be extracted; such a sample counts as wrong. A failed request is ``failed``
    (left out of accuracy, counted; a rerun retries it, which helps when the failure was
    transient: ``store.executor.rerun_advice``)."""
    item = planned.item
    fields: dict[str, Any] = {"id": item.id, "subject": item.subject, "prompt": planned.prompt,
                              "n_shots": planned.n_shots, "gold": item.answer}
    if planned.skipped:
        fields["skipped_shots"] = list(planned.skipped)
    pred: str | None = None
    error: str | None = None
    failed = isinstance(response, Failed)
    if isinstance(response, Failed):
        error = response.error
        fields.update(failed=True, failure=response.reason.kind)  # its kind, for the tables
    elif isinstance(response, NextLogprobs):
        scored = config.prompt.letters(item)
        letters = dict(zip(config.prompt.candidates(item), scored, strict=True))
        fields["logprobs"] = {letters[c]: v for c, v in response.logprobs.items()}
        pred = extract.from_logprobs(response.logprobs, scored)
        fields["extract"] = "likelihood: highest log-prob"
        if response.scoring:  # a server's: read from its top-k, or from prompt + option echoed
            fields["scoring"] = response.scoring
    elif isinstance(response, Generated):
        fields["output"] = response.text
        pred, fields["extract"], error = _extract(response.text, item.letters, config)
    else:
        raise TypeError(f"a multiple-choice answer cannot be a {type(response).__name__}")
    fields.update(pred=pred, correct=None if failed else pred == item.answer)
    if error:
        fields["error"] = error
    for key in ("year", "level"):
        if key in item.metadata:
            fields[key] = item.metadata[key]
    return MCQSample(**fields)


def _failures(samples: Sequence[MCQSample]) -> dict[str, list[dict[str, Any]]]:
    """The first 50 failed questions with their failure kind and error (absent when none)."""
    rows = [s.model_dump(include={"id", "subject", "failure", "error"}, exclude_unset=True)
            for s in samples if s.failed][:50]
    return {"failures": rows} if rows else {}


def _extract(text: str, letters: str, config: MCQConfig) -> tuple[str | None, str, str | None]:
    """(letter or None, the rule that decided, error when there is no letter)."""
    if config.extraction == "tmlu":
        pred, rule = (extract.tmlu_cot if config.prompt.cot else extract.tmlu_direct)(text)
        return pred, rule, None if pred else rule
    fn = extract.from_cot_text if config.prompt.cot else extract.from_direct_text
    pred, error = fn(text, letters)
    return pred, "strict-cot" if config.prompt.cot else "strict", error


def _unproven(samples: Sequence[MCQSample]) -> list[str]:
    """A line when --scoring auto kept the top-k answers because it could not tell whether the
    server's echo reads right (issue 63 item 4: a server that ignores echo)."""
    kept = sum(1 for s in samples if s.scoring == UNPROVEN)
    if not kept:
        return []
    return [f"{kept} of {len(samples)} questions were read from the server's top log-probs "
            "alone (an option outside them less likely than all of them, as --scoring top-k "
            "reads it): the server's echo could not be checked (its probe echoed nothing to "
            "compare: does it ignore echo?), so --scoring auto did not echo them"]


def _echoed(samples: Sequence[MCQSample]) -> list[str]:
    """A line when a server's questions were read from prompt + option echoed (``--scoring``
    auto or echo: 1 + #options requests each, where the top-k reads one): what the run cost is
    said where it is seen."""
    echoed = sum(1 for s in samples if s.scoring == "echo")
    if not echoed:
        return []
    return [f"{echoed} of {len(samples)} questions were read from prompt + option echoed (1 + "
            "#options requests each, on vLLM one with a /tokenize per prompt; the server's top "
            "log-probs did not hold every option): "
            "--top-logprobs as large as the server allows reads more of them from one request, "
            "--scoring top-k never echoes (questions it cannot read fail)"]


def _unknown_subjects(data: MCQData) -> list[str]:
    """A subject the built-in task does not list (a file named after its folder, such as the
    TMMLU+ sample's test.jsonl) is in no discipline: no column and no Average counts it."""
    unknown = [subject for subject, _, _ in data.subjects if subject not in data.spec.subjects]
    if not unknown:
        return []
    return [f"{len(unknown)} subject(s) not among {data.spec.name}'s: {', '.join(unknown[:5])}"
            f"{' …' if len(unknown) > 5 else ''}; in no discipline, so no column and no Average "
            "counts them (their accuracy is in the subject table and the micro average); name "
            "the files after the task's subjects (<subject>_test.csv), or run them as a custom "
            "task (--task <a name of your own>)"]


class MCQTask(Task):
    """A multiple-choice benchmark (TMLU, TMMLU+, CMMLU, or any local folder), 0-5 shot,
    likelihood or generation, direct or CoT; options: :class:`MCQOptions`."""

    results_schema = MCQ_SCHEMA
    Options = MCQOptions
    rate_unit = "questions"

    def __init__(self, name: str, **options: Any):
        self.name = name
        self.options = benchmark_options(name, options)
        # the bar counts requests: a question asked in other option orders or draws is several
        self.progress_unit = "requests" if mcq_variants.has_variants(self.options) \
            else "questions"
        self.dataset = dataset_of(name)  # a benchmark reads its catalog dataset
        self.config = MCQConfig.of(self.options, self.dataset,
                                   default_prompt_style(self.dataset))

    def load(self) -> MCQData:
        """(subject, dev, test) per subject, sorted by subject; test cut to ``limit``."""
        o = self.options
        spec, loaded = load_mcq_data(self.dataset, o.data, o.subjects, o.dataset_revision)
        source = str(o.data or spec.hub_id)
        subjects = []
        for subject in sorted(loaded):
            splits = loaded[subject]
            check_subject(subject, splits, self.config, source)
            test = splits["test"][: o.limit] if o.limit else splits["test"]
            subjects.append((subject, splits.get("dev", []), test))
        if self.dataset not in BUILTIN_TASKS:  # once the data is good, before the model loads
            announce_custom_task(self.name, self.config.prompt.style)
        return MCQData(spec, subjects)

    def plan(self, data: MCQData, backend: Backend) -> list[Planned]:
        backend = with_defaults(backend)
        if self.config.max_length is not None and not backend.cuts_context:
            raise LocalevalError("--max-length cuts the prompt's tokens, and this backend is "
                                 "sent text: use a local backend (hf:, vllm:)")
        count, context = backend.count_tokens, backend.max_context()

        def plan_one(subject: str, dev: list[MCQItem], test: list[MCQItem]) -> list[Planned]:
            return plan(data.spec, subject, dev, test, self.config, count, context)

        planned = mcq_variants.plan_with_variants(data.subjects, plan_one, self.options)
        problem = candidate_problem(backend, [p.request for p in planned]
                                    + [vp.request for p in planned for _, vp in p.variants])
        if problem:  # every question would fail alone, and every rerun again: one line now
            styles = self._styles_that_score(data, backend)
            other = (f"--prompt-style {' or '.join(styles)}, whose letters this model's "
                     "tokenizer tells apart" if styles else "another --prompt-style")
            raise LocalevalError(f"--method likelihood cannot score this model: {problem}, so "
                                 "every question would fail the same way; use --method "
                                 f"generation, or {other}")
        return planned

    def _styles_that_score(self, data: MCQData, backend: Backend) -> list[str]:
        """The other prompt styles whose candidates the backend's tokenizer tells apart, asked
        of the first question as that style plans it (issue 69: the error names the style
        that works, not an internal request): the way out, checked, not guessed."""
        import dataclasses

        from .prompt_styles import PROMPT_STYLES

        subject, dev, test = data.subjects[0]
        found = []
        for style in PROMPT_STYLES:
            if style == self.config.prompt.style:
                continue
            try:
                options = dataclasses.replace(self.options, prompt_style=style)
                config = MCQConfig.of(options, self.dataset, default_prompt_style(self.dataset))
                first = plan(data.spec, subject, dev, test[:1], config, backend.count_tokens,
                             backend.max_context())
            except LocalevalError:  # a style the other options refuse (CoT needs tmlu)
                continue
            if first and not candidate_problem(backend, [first[0].request]):
                found.append(style)
        return found

    def respond(self, planned: Sequence[Planned], execute: Execute) -> list[Any]:
        return mcq_variants.respond_with_variants(planned, execute)

    def score(self, planned: Planned, answer: Response | mcq_variants.WithVariants) -> MCQSample:
        return mcq_variants.score_with_variants(planned, answer,
                                                lambda p, a: score(p, a, self.config))

    def summarise(self, samples: Sequence[MCQSample], data: MCQData,
                  identity: dict[str, Any]) -> MCQResults:
        prompt, spec = self.config.prompt, data.spec
        warnings = _unknown_subjects(data) + _echoed(samples) + _unproven(samples)
        # warnings, failures and robustness are absent, not empty, when there are none
        optional: dict[str, Any] = {
            **({"warnings": warnings} if warnings else {}), **_failures(samples),
            **({"robustness": mcq_variants.robustness(samples, self.options)}
               if mcq_variants.has_variants(self.options) else {})}
        return MCQResults(
            schema_=self.results_schema,
            task=self.name,
            model=identity.get("model"),
            method=self.config.method,
            shots=prompt.shots,
            cot=prompt.cot,
            prompt_style=prompt.style,
            paper_table=spec.paper_table,
            disciplines=list(spec.disciplines),
            metrics=aggregate(samples, spec.subjects, spec.disciplines, spec.year_floor),
            n_samples=len(samples),
            n_failed=sum(1 for s in samples if s.failed),
            failed=[str(s.id) for s in samples if s.failed][:50],
            unanswered=[str(s.id) for s in samples if s.pred is None and not s.failed],
            **optional,
        )

    def spec_parts(self, data: MCQData) -> SpecParts:
        """Its options as run (the subjects read; the prompt style, budget and extraction the
        spec resolves for its dataset, ``MCQOptions.resolved``)."""
        o = self.options
        return SpecParts(replace(o, subjects=[subject for subject, _, _ in data.subjects]),
                         source=str(o.data) if o.data is not None else
                         f"hf://{data.spec.hub_id}", protocol=MCQ_PROTOCOL)

