"""``execute`` stand-ins for tests that hand a guard or a task canned answers: the
:class:`~localeval.backends.base.Executor` protocol outside a run (no cache, no roles), as
:class:`~localeval.backends.base.Direct` is for a backend."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from localeval.backends.base import Direct, Executor, Request, Response


class NoRoles:
    """What an Executor offers beside ``__call__``, outside a run: no model of any role, and
    another backend run directly."""

    def role(self, name: str) -> Executor | None:
        return None

    def on(self, backend) -> Executor:
        return Direct(backend)


class Answers(NoRoles):
    """An Executor whose responses come from ``answer(requests)``."""

    def __init__(self, answer: Callable[[list[Request]], Sequence[Response]]):
        self.answer = answer

    def __call__(self, requests: Sequence[Request]) -> list[Response]:
        return list(self.answer(list(requests)))
