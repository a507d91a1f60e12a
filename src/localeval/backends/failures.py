"""Why a request failed, as types: a small hierarchy instead of an error string whose first
words are parsed. Each kind says whether a rerun may help (``transient``) and how tables name
it (``kind``).

A failed request is a :class:`~localeval.backends.base.Failed` holding one of these, from the
backend that saw it to the sample that names its kind (``failure``). Written as JSON (a guard's
raw output), it is ``error`` (the message), ``failure`` (the kind's name) and ``permanent``;
:func:`failure_from` reads that back, and JSON from before the kinds existed as
:class:`Unclassified`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class RequestFailure:
    """A failed request: its message (what a user reads) and its kind."""

    message: str
    kind: ClassVar[str] = "unclassified"
    transient: ClassVar[bool | None] = None  # True: a rerun may pass; None: cannot tell

    @property
    def permanent(self) -> bool | None:
        """The Response field: True when a rerun fails the same way, None when it may not."""
        return None if self.transient in (True, None) else True

    def __str__(self) -> str:
        return self.message


class Unclassified(RequestFailure):
    """A failure cached before kinds existed, or one a backend did not classify."""


class Timeout(RequestFailure):
    """The server did not answer within --timeout."""

    kind, transient = "timeout", True


class Unreachable(RequestFailure):
    """The connection was refused, reset or cut off."""

    kind, transient = "connection", True


@dataclass(frozen=True)
class HTTPStatus(RequestFailure):
    """The server answered with an error status: 408, 429 and 5xx may pass on a rerun; any
    other 4xx refuses this request."""

    status: int = 0
    kind: ClassVar[str] = "http"

    @property
    def permanent(self) -> bool | None:
        return None if self.status in (408, 429) or self.status >= 500 else True


class BadReply(RequestFailure):
    """A reply of the wrong shape or with invalid values (not JSON, a missing field, a NaN)."""

    kind, transient = "bad_reply", False


class ErrorReply(RequestFailure):
    """A 200 reply that says it failed, or one of the wrong shape that may pass on a retry."""

    kind, transient = "error_reply", True


class OverLimit(RequestFailure):
    """Over a limit the request will always hit: the model's context, --max-reply-mb, the
    server's top-k."""

    kind, transient = "over_limit", False


class ContextOverflow(OverLimit):
    """The prompt (with what is to be generated) is over the model's context: a local backend
    refuses it in these words where the authors' vLLM server answered HTTP 400, which their
    guards' code scores as a tie (``Guard.iris_failure``). Its own kind since issue 71; a
    cache written before holds it as an ``over_limit`` whose message says so."""

    kind, transient = "context_overflow", False


class Unsupported(RequestFailure):
    """A request this backend cannot run, or candidates its tokenizer cannot score apart."""

    kind, transient = "unsupported", False


class ModelError(RequestFailure):
    """The model raised while running the request (the same on every run)."""

    kind, transient = "model_error", False


FAILURE_KINDS: dict[str, type[RequestFailure]] = {
    cls.kind: cls for cls in (Unclassified, Timeout, Unreachable, HTTPStatus, BadReply,
                              ErrorReply, OverLimit, ContextOverflow, Unsupported,
                              ModelError)}


def as_failure(error: Exception) -> RequestFailure:
    """A request a backend refused before running it (the same on every run): over the
    model's context, or another thing it cannot run."""
    from ..errors import OverContextError

    if isinstance(error, OverContextError):
        return ContextOverflow(str(error))
    return Unsupported(str(error))


def failure_from(message: str, kind: str | None, status: int | None = None) -> RequestFailure:
    """A failure read back from JSON (a cached response, a sample)."""
    cls = FAILURE_KINDS.get(kind or "", Unclassified)
    if cls is HTTPStatus:
        return HTTPStatus(message, status=status or _status_in(message))
    return cls(message)


def status_of(failure: RequestFailure) -> int | None:
    """The HTTP status a failure answered with: an ``HTTPStatus``'s, or one a failure cached
    before the kinds existed (``Unclassified``) names in its message ("HTTP 400 from …");
    None for any other."""
    if isinstance(failure, HTTPStatus):
        return failure.status
    if type(failure) is Unclassified and failure.message.startswith("HTTP "):
        return _status_in(failure.message) or None
    return None


def _status_in(message: str) -> int:
    """The status of an "HTTP 503 from …" message (0 when it names none)."""
    word = message.removeprefix("HTTP ").split(" ", 1)[0]
    return int(word) if word.isdigit() else 0
