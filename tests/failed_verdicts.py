"""A failed guard verdict as a run makes it now and as one read from a cache written before its
kind was typed (issue 71 item 3): ``--on-failure iris`` must score both the same."""

from __future__ import annotations

from localeval.backends.failures import (
    ContextOverflow,
    HTTPStatus,
    OverLimit,
    RequestFailure,
    Timeout,
    Unclassified,
)
from localeval.guards.base import GuardVerdict

REQUEST_FAILED = ("backend error: ", " call failed: ")


def _message(error: str) -> str | None:
    """The request failure's own message in a verdict's error, or None: no request failed."""
    for marker in REQUEST_FAILED:
        if marker in error:
            return error.split(marker, 1)[1]
    return None


def typed_cause(message: str) -> RequestFailure:
    """The failure a backend gives today for ``message``: an HTTP status with its code, a
    context overflow, else a timeout (any other failed request)."""
    if message.startswith("HTTP "):
        return HTTPStatus(message, status=int(message.split()[1]))
    if "over the model's context" in message:
        return ContextOverflow(message)
    return Timeout(message)


def old_cause(message: str) -> RequestFailure:
    """The same failure read from an older cache: a context overflow as the ``over_limit`` it
    was before its own kind, anything else from before the kinds (``Unclassified``)."""
    return OverLimit(message) if "over the model's context" in message else Unclassified(message)


def failed_verdicts(error: str) -> dict[str, GuardVerdict]:
    """The verdict that fails with ``error``: as made now, from an older cache, and from a
    plugin guard that names only its failure's kind (its message read). A verdict whose
    requests succeeded (no label found) has no cause either way."""
    message = _message(error)
    if message is None:
        return {"no request failed": GuardVerdict(None, error)}
    return {"typed": GuardVerdict(None, error, cause=typed_cause(message)),
            "old cache": GuardVerdict(None, error, cause=old_cause(message)),
            "plugin": GuardVerdict(None, error, failure="http")}
