"""The guard interface, as small as GuardBench's: conversations in, P(harmful) out.

    guard = get_guard("llamaguard3")
    verdicts = guard.classify([Conversation(prompt, response)], execute)
    verdicts[0].score   # P(harmful) in [0, 1], or None with verdicts[0].error saying why

``execute`` runs requests through the run's backend and cache (a task hands it over); a guard
that needs no language model (a moderation API, an embedding classifier) implements only
:meth:`Guard.classify`. Guards built on a language model use the staged request/score adapter
in :mod:`.staged`.

Scores are never invented: a failed request, a missing label token or a malformed output gives
``GuardVerdict(None, error)``, which the task must count as a failure, never as "safe".
"""

from __future__ import annotations

import json
import numbers
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from ..backends.base import Executor as Execute
from ..backends.base import Failed, Response
from ..backends.failures import (
    ContextOverflow,
    OverLimit,
    RequestFailure,
    Unclassified,
    status_of,
)
from ..backends.reply_checks import number_problem
from ..errors import LocalevalError
from .options import GuardOptions

# IRIS's label names (guard_models valid_tokens values): a three-label guard's verdict
VerdictLabel = Literal["Safe", "Sensitive", "Harmful"]


class Unread:
    """``Guard.iris_failure``'s ``cause`` when no verdict's type is known: its message is read."""


UNREAD = Unread()


@dataclass(frozen=True)
class Conversation:
    """What a guard judges: a user prompt, optionally the assistant's response, and facts about
    the item that some guards use (``metadata["country"]`` for cultural awareness)."""

    prompt: str
    response: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GuardVerdict:
    """P(harmful) for one conversation, or ``score=None`` and the reason in ``error``."""

    score: float | None
    error: str | None = None
    # What the guard read its verdict from (the generated text, the label tokens' log-probs),
    # kept on the sample so a misclassification can be debugged.
    raw: Any = None
    # With ``error``: the kind of the request failure behind it (backends/failures.py), or
    # None when the requests succeeded but gave no verdict (VERDICT_FAILURE)
    failure: str | None = None
    # A guard of three labels: the one of highest probability (IRIS get_pred_label,
    # get_safeguard_label), which App. D.2 reads where a two-label guard's score > 0.5 is used
    label: VerdictLabel | None = None
    # With ``error``: the request failure behind it, as its type (an HTTP 400 with its status, a
    # context overflow), which ``--on-failure iris`` decides by (:meth:`Guard.iris_failure`);
    # ``failure`` is its kind's name. None: the requests succeeded (or a plugin guard's verdict
    # that names only ``failure``)
    cause: RequestFailure | None = None

    def __post_init__(self) -> None:
        if self.cause is not None and self.failure is None:
            object.__setattr__(self, "failure", self.cause.kind)

    @property
    def known_cause(self) -> RequestFailure | None | Unread:
        """What :meth:`Guard.iris_failure` decides by: the failure's type, None where no
        request failed, and ``UNREAD`` for a verdict that names a failure's kind without its
        type (a plugin guard's), whose message is read."""
        return UNREAD if self.cause is None and self.failure is not None else self.cause

    @property
    def ok(self) -> bool:
        return self.score is not None

    def checked(self) -> GuardVerdict:
        """This verdict, or a failure if its score is not a probability (NaN, 7, "0.9")."""
        problem = None if self.score is None else number_problem(self.score, at_least=0,
                                                                 at_most=1)
        if problem is None:
            return self
        return GuardVerdict(None, f"the guard's score {problem}, not a probability", self.raw)


VERDICT_FAILURE = "no_verdict"  # the replies came, but held no readable verdict
# What IRIS makes of a failed verdict (Guard.iris_failure): "tie" every label at 1/#labels
# (an HTTP 400), "no-label" no label at all (scored 0.0, get_pred_label None), "safe" a Safe
# label at 1.0 (a moderation wrapper's unreadable reply), "stops" no score (its script stops)
IrisFailure = Literal["tie", "no-label", "safe", "stops"]
IRIS_FAILURE_SCORES: dict[IrisFailure, float | None] = {"no-label": 0.0, "safe": 0.0,
                                                       "stops": None}


def refused_request(error: str) -> bool:
    """Whether a failed verdict's message says IRIS's server would have answered HTTP 400: an
    HTTP 400, or a prompt over the model's context, which our local backends refuse in those
    words where the authors' vLLM server answered HTTP 400. Read only where no type says it
    (:func:`refused`): a failure cached before its kind existed, a plugin's verdict."""
    return "HTTP 400" in error or "over the model's context" in error


def refused(cause: RequestFailure) -> bool:
    """Whether IRIS's server would have answered this failed request with HTTP 400: an HTTP
    400, or a context overflow (:class:`ContextOverflow`). A failure read from a cache written
    before the kinds existed (``Unclassified``) or before context overflows had their own
    (an ``over_limit``) says it only in its message."""
    if isinstance(cause, ContextOverflow) or status_of(cause) == 400:
        return True
    return type(cause) in (Unclassified, OverLimit) and \
        "over the model's context" in cause.message


def cause_of(response: Response | None) -> RequestFailure | None:
    """The request failure of a failed response, as its type (None when it did not fail)."""
    return response.reason if isinstance(response, Failed) else None


class Guard(ABC):
    """A safeguard. Subclasses set ``name``, ``template_source`` (where the template or API
    comes from) and ``verdict_position`` (where the verdict is read), and implement
    :meth:`classify`."""

    name: str = ""
    template_source: str = ""
    verdict_position: str = ""
    supports_response: bool = True  # False: the guard classifies prompts only
    n_labels: int = 2  # verdict labels; --on-failure neutral scores a failure 1 / n_labels
    # A guard with a model of its own (an embedding guard's embedder) names its backend spec:
    # the run uses it when no --model is given.
    model: str | None = None
    # Item facts the guard cannot work without, each with why (for the task's messages):
    # items that lack one are left out, with a warning.
    requires: Mapping[str, str] = {}
    # Its model roles' guard options, by role: how a user names a copy of that model.
    role_ways: Mapping[str, str] = {}
    # Its options, declared once (guards/options.py, issue 67): the class, and the object it
    # was made with (``options.given``, what was asked for, is recorded in config.json)
    Options: ClassVar[type[GuardOptions]] = GuardOptions
    options: GuardOptions = GuardOptions()
    # How messages name it (the registry's: "guard 'x' (module:Class, from package)"), and
    # whether another package's (an entry point's plugin: its failures named, its raw checked)
    source: str = ""
    plugin: bool = False

    def __init__(self, options: GuardOptions | None = None) -> None:
        """The guard, made whole from its options (its family's ``Options``; the defaults when
        None): nothing changes it after."""
        self.options = options if options is not None else type(self).Options()

    def options_problem(self) -> str | None:
        """Why these options cannot be used together with this guard (its reading decides),
        or None: the registry refuses the guard with it before any model loads."""
        return None

    @property
    def label_scores_used(self) -> str | None:
        """How label log-probs become scores (guards on a language model: ``top-k``, ``full``
        …); None for a guard that reads none."""
        return None

    @property
    def verdict_position_used(self) -> str | None:
        """Where a guard its authors run generating reads its verdict (``first-label``,
        ``fixed``); None for any other guard."""
        return None

    @property
    def label_top(self) -> int | None:
        """How many top log-probs a label must be among to count (None: every one counts)."""
        return None

    def model_roles(self) -> dict[str, str]:
        """Second models the guard needs beside the run's, by role (X-Guard's translator): the
        run checks each before any model loads, loads it with its own options, records it in
        config.json and hands it to :meth:`classify` as ``execute.role(role)``."""
        return {}

    @abstractmethod
    def classify(self, conversations: Sequence[Conversation],
                 execute: Execute) -> list[GuardVerdict]:
        """One verdict per conversation, in order."""

    def verdicts(self, conversations: Sequence[Conversation],
                 execute: Execute) -> list[GuardVerdict]:
        """:meth:`classify`, what it gives checked where it enters the run (a plugin's guard
        is another package's code): one verdict per conversation, each a GuardVerdict with a
        number or None for its score (a numpy scalar taken as the number it is); a plugin's
        ``raw`` made JSON (numpy arrays as lists) and anything it raises one line naming it.
        A score that is a number but not a probability fails its sample alone
        (:meth:`GuardVerdict.checked`)."""
        who = self.source or f"guard {self.name!r}"
        conversations = list(conversations)
        try:
            given: Any = self.classify(conversations, execute)
        except LocalevalError:
            raise  # the run's own (a spend cap, a backend refused): already one line
        except Exception as e:  # noqa: BLE001 - another package's code: any failure named
            if not self.plugin:
                raise  # a built-in guard's bug: its traceback is what fixes it
            raise LocalevalError(f"{who} raised {type(e).__name__}: {_first_line(e)}") from None
        if not isinstance(given, list | tuple):
            raise LocalevalError(f"{who} gave {type(given).__name__}, not a list of "
                                 "GuardVerdict")
        if len(given) != len(conversations):
            raise LocalevalError(f"{who} gave {len(given)} verdicts for {len(conversations)} "
                                 "conversations (one each, in order)")
        return [self._entered(v, i, who) for i, v in enumerate(given, start=1)]

    def _entered(self, verdict: Any, i: int, who: str) -> GuardVerdict:
        if not isinstance(verdict, GuardVerdict):
            raise LocalevalError(f"{who} gave a {type(verdict).__name__}, not a GuardVerdict "
                                 f"(verdict {i})")
        score = verdict.score
        if isinstance(score, numbers.Real) and not isinstance(score, bool | int | float):
            score = float(score)  # numpy's float32, int64: numbers, as JSON writes them
        elif score is not None and (isinstance(score, bool)
                                    or not isinstance(score, int | float)):
            raise LocalevalError(f"{who}: verdict {i}'s score {_short(score)} is not a number")
        raw = verdict.raw
        if self.plugin and raw is not None:
            raw = _as_json(raw)
            try:
                json.dumps(raw)
            except (TypeError, ValueError) as e:
                raise LocalevalError(f"{who}: verdict {i}'s raw {_short(verdict.raw)} is not "
                                     f"JSON ({e})") from None
        if score is verdict.score and raw is verdict.raw:
            return verdict
        return GuardVerdict(score, verdict.error, raw, verdict.failure, verdict.label,
                            verdict.cause)

    def iris_failure_score(self, error: str, response: bool = False,
                           conversation: Conversation | None = None,
                           cause: RequestFailure | None | Unread = UNREAD) -> float | None:
        """What the authors' code scores a failed verdict of this guard (``--on-failure
        iris``) on ``conversation``, or None where it has no score (its run stops there):
        :meth:`tie_score` for a tie, 0.0 with no label or a Safe one (:meth:`iris_failure`)."""
        kind = self.iris_failure(error, response, cause)
        return self.tie_score(conversation) if kind == "tie" else IRIS_FAILURE_SCORES[kind]

    def tie_score(self, conversation: Conversation | None = None) -> float:
        """The score of every label at one probability (IRIS's HTTP-400 fill): 1/#labels for a
        guard whose score is P(harmful) alone; a guard that adds another label's weight (SEA-LION
        Guard's Sensitive) says so."""
        return 1 / self.n_labels

    def iris_failure(self, error: str, response: bool = False,
                     cause: RequestFailure | None | Unread = UNREAD) -> IrisFailure:
        """What the authors' code makes of a failed verdict of this guard (of a response when
        ``response``).

        A guard on a language model (IRIS ``generative_models/api_model.py``
        ``APIGenerativeLLM.complete``): an HTTP 400 (a context overflow, say) returns no
        log-probs, which ``guard_models/base.py`` ``GuardLLM.complete`` turns into every valid
        token at log-prob 0.0, so each label gets 1 / #labels; any other request error is
        retried 10 times and then the script stops (``answer`` is unbound). An answer whose
        read positions hold no label gives ``pred_labels`` [] and ``get_eval_result.py``
        ``get_pred_score`` sums nothing: 0.0. A context overflow is an HTTP 400 there (the
        authors served their guards with vLLM).

        Decided by ``cause``, the verdict's request failure as its type (None: no request
        failed, so no label was found), as every verdict made now carries it: an HTTP 400 or a
        context overflow (:func:`refused`) ties, any other failed request stops. ``UNREAD``:
        only a message is known (a verdict from a plugin that names no cause), which is read
        as before the types: "HTTP 400" or "over the model's context" in it ties, a "backend
        error" stops."""
        if not isinstance(cause, Unread):
            return "no-label" if cause is None else "tie" if refused(cause) else "stops"
        if refused_request(error):
            return "tie"
        if error.startswith("backend error"):
            return "stops"
        return "no-label"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def _as_json(value: Any) -> Any:
    """``value`` with numpy's arrays and scalars as the lists and numbers they hold (their
    ``tolist``), in dicts, lists and tuples too; anything else as it is."""
    if isinstance(value, dict):
        return {k: _as_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_as_json(v) for v in value]
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and type(value).__module__.startswith("numpy"):
        return tolist()
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else "(no message)"


def generate_decoding(decoding: str) -> str | None:
    """``Generate.decoding`` for a guard's ``decoding`` option (checked by its options):
    ``generation-config`` (the authors': transformers' generate() without do_sample, so the
    checkpoint's generation_config decides, seeded here) or ``greedy`` (ours: None)."""
    return "generation_config" if decoding == "generation-config" else None
