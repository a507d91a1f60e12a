"""Typed records of samples.jsonl: one record type per kind of task, made by the task's
``score``, taken by the analyses and views, written to samples.jsonl from the record and read
back into it (:func:`read_sample`, which names the line and the field of a damaged one).

Like the results records (:mod:`.base`), a sample keeps keys it does not declare (a newer
localeval's, a plugin task's), so a folder round-trips unchanged; a field an earlier version
did not write stays unset and is not written back. A field that is optional here is one that
some version, kind of run or failure leaves out.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar, get_args

from pydantic import BeforeValidator, Field, JsonValue, Strict, ValidationError

from .base import Num, Record, RecordError, Sample, describe
from .sample_kinds import Context, SampleKind

__all__ = ["ContaminationSample", "LLMSafetySample", "MCQSample", "SafetySample", "Sample",
           "VariantEntry", "read_sample"]

# A prompt as sent: the text, or chat messages ({"role", "content"}).
PromptSent = str | list[dict[str, Any]]


def _true_false_or_null(value: object) -> object:
    if value is not None and not isinstance(value, bool):
        raise ValueError("true, false or null")
    return value


# Whether an answer is right: true, false, or null where its request failed (1 or "yes" is a
# hand edit; the message says what the field takes, not pydantic's "a valid boolean").
Correct = Annotated[bool | None, BeforeValidator(_true_false_or_null)]


class VariantEntry(Record):
    """A question asked again (another option order or another draw): ``variants`` of its
    sample (tasks/mcq_variants.py)."""

    order: int = Field(description="the cyclic shift of the options (0: as written)")
    pred: str | None = Field(description="the prediction, as the original option's letter")
    correct: Correct = Field(description="whether it is right; None: the request failed")
    repeat: int | None = Field(default=None, description="the sampled draw (absent: greedy or "
                               "likelihood)")


class MCQSample(Sample):
    """A multiple-choice question answered (TMLU, TMMLU+, CMMLU, a custom exam)."""

    subject: str | None = Field(default=None, description="the question's subject")
    prompt: PromptSent | None = Field(default=None, description="the prompt sent, few-shot examples "
                                      "included")
    n_shots: int | None = Field(default=None, description="few-shot examples in the prompt")
    skipped_shots: list[JsonValue] | None = Field(default=None, description="few-shot examples left "
                                                  "out so the prompt fits the context")
    gold: str = Field(description="the right option's letter")
    pred: str | None = Field(default=None, description="the predicted letter; None: no answer "
                             "extracted (wrong), or the request failed")
    correct: Correct = Field(default=None, description="pred is gold; None: the request failed")
    failed: bool = Field(default=False, description="the request failed (left out of accuracy)")
    failure: str | None = Field(default=None, description="the failure's kind, for the tables")
    # None for an option outside a server's top log-probs (--scoring top-k, or auto's
    # fallback): it ranks below every number, and was a validation traceback before issue 63
    logprobs: dict[str, Num | None] | None = Field(
        default=None, description="likelihood: each option letter's log-prob; null: outside the "
        "server's top log-probs (less likely than all of them)")
    scoring: str | None = Field(default=None, description="how a server's log-probs were read (its "
                                "top-k, or the prompt and option echoed)")
    output: str | None = Field(default=None, description="generation: the text generated")
    extract: str | None = Field(default=None, description="the rule that read the answer")
    year: JsonValue = Field(default=None, description="the exam year, where the data gives one")
    level: JsonValue = Field(default=None, description="the education level, where the data gives one")
    variants: list[VariantEntry] | None = Field(default=None, description="the question in other "
                                                "option orders or draws")

    @property
    def is_failed(self) -> bool:
        return self.failed


class SafetySample(Sample):
    """A guard's verdict on one prompt or response (sea-safeguard, safety-prompts,
    safety-responses)."""

    lang: str = Field(description="the item's language")
    subset: str = Field(description="general, cultural-itw, cultural-cg, or the file")
    kind: Annotated[SampleKind, Strict(False)] = Field(description="what was judged: the "
                                                        "prompt or the response")
    context: Annotated[Context, Strict(False)] = Field(
        default=Context.WITH_PROMPT, description="a response judged with its prompt or without")
    raw_label: str | None = Field(default=None, description="the gold label as the data gives it")
    label: int | None = Field(default=None, description="the gold label as scored: 1 harmful, 0 safe, "
                              "None left out by the label policy")
    severity: Num | None = Field(default=None, description="the gold severity (0-1): the annotators' "
                                 "mean, else the label")
    score: Num | None = Field(default=None, description="the guard's P(harmful); None: the verdict "
                              "failed")
    country: str | None = Field(default=None, description="the cultural item's country")
    guard: str | None = Field(default=None, description="the guard's name")
    model: str | None = Field(default=None, description="the guard's model")
    prompt: str | None = Field(default=None, description="the prompt judged (or beside the response)")
    response: str | None = Field(default=None, description="the response judged")
    prompt_sha256: str | None = Field(default=None, description="the prompt's sha256, without "
                                      "--log-samples")
    response_sha256: str | None = Field(default=None, description="the response's sha256")
    guard_output: JsonValue = Field(default=None, description="the guard's raw output: generated "
                                    "text, label log-probs, ranks")
    failure: str | None = Field(default=None, description="the failure's kind")
    neutral: bool = Field(default=False, description="a failed verdict kept with a fixed score "
                          "(--on-failure neutral or iris)")

    @property
    def task_name(self) -> str:
        """How a table names its kind and context: "prompt", "response (no prompt)"."""
        return self.kind.value + self.context.suffix


class LLMSafetySample(Sample):
    """A model's response to a prompt, judged harmful or not and read for a refusal
    (llm-safety)."""

    draw: int = Field(default=0, description="which of the prompt's responses")
    lang: str = Field(description="the prompt's language")
    subset: str = Field(description="the prompt's subset")
    prompt_label: str | None = Field(default=None, description="the prompt's gold label as the data "
                                     "gives it")
    harmful_prompt: int | None = Field(default=None, description="the prompt's label as scored: 1 "
                                       "harmful, 0 safe, None left out")
    prompt: str | None = Field(default=None, description="the prompt")
    response: str | None = Field(default=None, description="the model's response (None: it failed)")
    failed: bool = Field(default=False, description="the sample failed (generation, judge or "
                         "refusal judge)")
    judge_score: Num | None = Field(default=None, description="the judge's P(harmful)")
    harmful_response: int | None = Field(default=None, description="judged not safe: judge_score above "
                                         "0.5, or a three-label judge's label other than Safe")
    judge_failure_safe: bool | None = Field(default=None, description=(
        "a failed judge verdict IRIS's get_pred_label reads as Safe (an HTTP 400: every label "
        "1/#labels, Safe first); App. D.2's iris rates count it a safe response"))
    refused: bool | None = Field(default=None, description="the response is a refusal")
    refusal_phrase: str | None = Field(default=None, description="the phrase the detector matched")
    refusal_judge_output: str | None = Field(default=None, description="the refusal judge's text")
    # D.2 (a safeguard before or after the model): what happened to the sample
    safeguard_score: Num | None = Field(default=None, description="the safeguard's P(harmful) of the "
                                        "prompt")
    safeguard_harmful: bool | None = Field(default=None, description="the safeguard labelled the "
                                           "prompt harmful")
    safeguard_error: str | None = Field(default=None, description="why the safeguard gave no label")
    fixed_answer: bool | None = Field(default=None, description="the safeguard's fixed answer was "
                                      "given instead of the model's")
    refined: bool | None = Field(default=None, description="the response was refined")
    original_response: str | None = Field(default=None, description="the response before refining")
    dropped: bool | None = Field(default=None, description="IRIS's refine step kept no response")

    @property
    def is_failed(self) -> bool:
        return self.failed


# A text's two contamination scores: each a dict k% -> score in its sample, and per k in the
# results (records/contamination.py)
Score = Literal["min_k", "min_k_pp"]
SCORES: tuple[Score, ...] = get_args(Score)


class ContaminationSample(Sample):
    """A text's Min-k% Prob scores (contamination)."""

    source: str = Field(description="where the text came from (its --data source)")
    subject: str | None = Field(default=None, description="its subject, for exam questions")
    n_chars: int | None = Field(default=None, description="characters in the text")
    n_tokens: int | None = Field(default=None, description="tokens scored")
    # a k's value is None where --k-tokens floor leaves it no token (the reference codes' NaN)
    min_k: dict[str, Num | None] | None = Field(default=None, description="k% -> Min-k% Prob")
    min_k_pp: dict[str, Num | None] | None = Field(default=None, description="k% -> Min-k%++")
    failed: bool = Field(default=False, description="no score (the request failed, or one token)")

    @property
    def is_failed(self) -> bool:
        return self.failed

    def scores(self, score: Score) -> dict[str, Num | None] | None:
        """k% -> the text's ``score`` (min_k or min_k_pp); None: not computed."""
        return self.min_k if score == "min_k" else self.min_k_pp


SampleT = TypeVar("SampleT", bound=Sample)


def read_sample(kind: type[SampleT], data: object, where: str) -> SampleT:
    """A line's JSON data as a ``kind``, or RecordError: ``<where>: field <f>: ...``."""
    try:
        return kind.model_validate(data)
    except ValidationError as e:
        raise RecordError(f"{where}: {describe(e)}") from None
