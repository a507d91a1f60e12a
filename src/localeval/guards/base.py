"""Guard adapters: a template that turns (prompt, response?) into Requests, and a rule that turns
the Responses into P(harmful).

A guard knows nothing of datasets or backends. The safety task asks it for requests, has a
backend run them, and hands the responses back::

    guard = get_guard("llamaguard3")
    verdicts = run_guard(guard, backend, [(prompt, response, country), ...])
    verdicts[0].score   # P(harmful) in [0, 1], or None with verdicts[0].error saying why

Scores are never invented: a failed request, a missing label token or a malformed staged output
gives ``GuardVerdict(None, error)``, which the task must count as a failure, never as "safe".

Stages. Most guards need one forward pass per item (``stages == 1``). A few read their verdict
after text the model writes itself (WildGuard's and PolyGuard's "Harmful response:" line comes
after lines the model generates; X-Guard reasons before its ``<label>``). Those have
``stages == 2``: stage 0 generates, stage 1 scores, and ``requests(..., earlier=stage0)`` builds
the second stage from the first stage's responses. :func:`run_guard` batches each stage across
all items.

Why many templates are plain strings. A guard model's own chat template builds the guard prompt
from the conversation (LlamaGuard, ShieldGemma, Qwen3Guard). Our backend treats a final
assistant message as a prefill, and a backend serving a different tokenizer (our tests' tiny
ChatML model) would wrap the messages in the wrong template. So those guards send the exact
text their chat template produces, as a plain string; the backend tokenises it with the
tokenizer's special tokens (which adds the BOS token, so templates leave it out). Guards whose
published usage is an ordinary chat (PolyGuard, X-Guard, the zero-shot classifier) send chat
messages and let the backend apply the model's chat template.
"""

from __future__ import annotations

import importlib
import inspect
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass

from ..backends.base import Request, Response
from ..errors import LocalevalError


@dataclass(frozen=True)
class GuardVerdict:
    """P(harmful) for one item, or ``score=None`` and the reason in ``error``."""

    score: float | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.score is not None


class Guard:
    """Base class of the guard adapters.

    Subclasses set ``name``, ``template_source`` (where the template comes from),
    ``verdict_position`` (where in the output the verdict token is read) and implement
    :meth:`requests` and :meth:`score`.
    """

    name: str = ""
    template_source: str = ""
    verdict_position: str = ""
    stages: int = 1
    supports_response: bool = True  # False: the guard classifies prompts only

    def requests(self, prompt: str, response: str | None = None, *, country: str | None = None,
                 earlier: Sequence[Response] = ()) -> list[Request]:
        """The requests of the next stage for one item (``earlier`` holds the responses of the
        stages before). An empty list means there is nothing left to run; :meth:`score` then
        explains why."""
        raise NotImplementedError

    def score(self, responses: Sequence[Response]) -> GuardVerdict:
        """P(harmful) from the responses of all stages, in request order."""
        raise NotImplementedError

    def _check_response_allowed(self, response: str | None) -> None:
        if response is not None and not self.supports_response:
            raise LocalevalError(f"guard {self.name!r} classifies prompts only; use it for "
                                 "prompt classification or pick another guard for responses")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


# ------------------------------------------------------------------------------ scoring helpers
def label_probabilities(response: Response, labels: Sequence[str]) -> dict[str, float] | str:
    """Softmax of the labels' log-probs renormalised over the labels alone, or an error string.

    P(label) = exp(lp_label) / sum_l exp(lp_l), computed stably from the largest log-prob.
    """
    if response.error:
        return f"backend error: {response.error}"
    if response.logprobs is None:
        return "the response has no log-probs (was the request a ScoreNext?)"
    missing = [label for label in labels if label not in response.logprobs]
    if missing:
        return f"no log-prob for label(s) {missing}"
    values = [response.logprobs[label] for label in labels]
    if any(v is None or math.isnan(v) or v == math.inf for v in values):
        return f"invalid log-probs {dict(zip(labels, values, strict=True))}"
    top = max(values)
    if top == -math.inf:
        return "every label token has probability 0"
    weights = [math.exp(v - top) for v in values]
    total = sum(weights)
    return {label: w / total for label, w in zip(labels, weights, strict=True)}


def binary_verdict(responses: Sequence[Response], harmful: str, safe: str,
                   expected: int = 1) -> GuardVerdict:
    """Renormalised P(harmful label) from the last of ``expected`` responses."""
    if len(responses) != expected:
        return GuardVerdict(None, f"expected {expected} response(s), got {len(responses)}")
    probs = label_probabilities(responses[-1], (harmful, safe))
    if isinstance(probs, str):
        return GuardVerdict(None, probs)
    return GuardVerdict(probs[harmful])


# ------------------------------------------------------------------------------ registry
# name -> (module under localeval.guards, class name, fixed options)
_REGISTRY: dict[str, tuple[str, str, dict]] = {
    "zero-shot": ("zero_shot", "ZeroShotGuard", {}),
    "llamaguard3": ("llamaguard", "LlamaGuard3", {}),
    "llamaguard4": ("llamaguard", "LlamaGuard4", {}),
    "shieldgemma": ("shieldgemma", "ShieldGemma", {}),
    "qwen3guard": ("qwen3guard", "Qwen3Guard", {}),
    "polyguard": ("polyguard", "PolyGuard", {}),
    "wildguard": ("wildguard", "WildGuard", {}),
    "xguard": ("xguard", "XGuard", {}),
}


def available_guards() -> list[str]:
    return sorted(_REGISTRY)


def get_guard(name: str, **options) -> Guard:
    """Make the guard adapter registered as ``name`` (e.g. ``llamaguard3``) with its options."""
    key = name.strip().lower().replace("_", "-")
    if key not in _REGISTRY:
        raise LocalevalError(f"unknown guard {name!r}; available: {', '.join(available_guards())}")
    module, cls_name, fixed = _REGISTRY[key]
    cls: Callable[..., Guard] = getattr(importlib.import_module(f"{__package__}.{module}"),
                                        cls_name)
    accepted = [p for p in inspect.signature(cls).parameters if p != "self"]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise LocalevalError(f"guard {key!r} has no option(s) {', '.join(unknown)}; it accepts: "
                             f"{', '.join(accepted) or 'no options'}")
    return cls(**fixed, **options)


# ------------------------------------------------------------------------------ running
GuardInput = tuple[str, str | None, str | None]  # (prompt, response or None, country or None)


def run_stages(guard: Guard, inputs: Sequence[GuardInput],
               execute: Callable[[list[Request]], list[Response]]) -> list[GuardVerdict]:
    """Run the guard's stages over all inputs; one verdict per input.

    Each stage's requests of all inputs go to ``execute`` in one list, identical requests once
    (the same prompt judged for several responses, say).
    """
    done: list[list[Response]] = [[] for _ in inputs]
    for _stage in range(guard.stages):
        owners: list[tuple[int, str]] = []
        unique: dict[str, Request] = {}
        for i, (prompt, response, country) in enumerate(inputs):
            for req in guard.requests(prompt, response, country=country, earlier=done[i]):
                key = json.dumps(asdict(req), sort_keys=True, ensure_ascii=False)
                unique.setdefault(key, req)
                owners.append((i, key))
        if not unique:
            break
        keys = list(unique)
        answers = dict(zip(keys, execute([unique[k] for k in keys]), strict=True))
        for i, key in owners:
            done[i].append(answers[key])
    return [guard.score(responses) for responses in done]


def run_guard(guard: Guard, backend, items: Iterable[GuardInput],
              progress=None) -> list[GuardVerdict]:
    """Classify ``(prompt, response_or_None, country_or_None)`` items with ``guard`` on
    ``backend``: each stage's requests of all items go to the backend in one call."""
    return run_stages(guard, list(items), lambda reqs: backend.run(reqs, progress=progress))


# ------------------------------------------------------------------------------ answer-line guards
class AnswerLinesGuard(Guard):
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
    stage0_pattern = None  # compiled regex, full match of the text generated in stage 0
    max_tokens = 64

    def build(self, prompt: str, response: str | None, answer: str):
        """The request prompt for (prompt, response) with ``answer`` as the start of the
        model's answer."""
        raise NotImplementedError

    def requests(self, prompt: str, response: str | None = None, *, country: str | None = None,
                 earlier: Sequence[Response] = ()) -> list[Request]:
        from ..backends.base import Generate, ScoreNext

        if not earlier:
            if response is None:
                return [ScoreNext(self.build(prompt, None, self.request_prefill),
                                  (self.harmful, self.safe))]
            return [Generate(self.build(prompt, response, self.request_prefill),
                             max_tokens=self.max_tokens, stop=(self.response_prefill,))]
        if response is None or len(earlier) != 1 or self._stage0_problem(earlier[0]):
            return []
        answer = self.request_prefill + earlier[0].text + self.response_prefill
        return [ScoreNext(self.build(prompt, response, answer), (self.harmful, self.safe))]

    def _stage0_problem(self, resp: Response) -> str | None:
        if resp.error:
            return f"backend error in the generation stage: {resp.error}"
        if resp.text is None:
            return "the generation stage returned no text"
        if not self.stage0_pattern.fullmatch(resp.text):
            return (f"the model's answer lines before {self.response_prefill!r} are not in the "
                    f"expected format: {resp.text!r}")
        return None

    def score(self, responses: Sequence[Response]) -> GuardVerdict:
        if len(responses) == 1 and responses[0].text is not None:
            problem = self._stage0_problem(responses[0])
            return GuardVerdict(None, problem or "the scoring stage was not run")
        if len(responses) == 1 and responses[0].error and responses[0].logprobs is None:
            # A failed stage 0 of response classification, or a failed prompt ScoreNext: both
            # carry the backend's message.
            return GuardVerdict(None, f"backend error: {responses[0].error}")
        if len(responses) not in (1, 2):
            return GuardVerdict(None, f"expected 1 or 2 responses, got {len(responses)}")
        return binary_verdict(responses, self.harmful, self.safe, expected=len(responses))
