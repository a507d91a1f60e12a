"""Tokens per model role, their cost, and the budget that stops a run (issue 38 item 4).

Four counts are kept apart, per role (``model``, ``judge``, ``translator``):

- ``prompt_tokens`` / ``completion_tokens``: what every answer of the run took, as its backend
  counted it when it was made (answers read from our cache keep their counts);
- ``provider_cached_tokens``: of the prompt tokens, those the server says it served from its
  own prompt cache (OpenAI's ``prompt_tokens_details.cached_tokens``), where it says so;
- ``cache_hits``: requests answered from localeval's request cache (nothing sent);
- ``sent_prompt_tokens`` / ``sent_completion_tokens``: what this invocation sent, the part a
  budget counts and a provider bills now.

``--price in=X,out=Y`` (per million tokens) prices the run's model's tokens: ``cost.total`` for
every answer, ``cost.spent`` for this invocation. ``--max-spend`` and ``--max-tokens-total``
stop the run between two backend calls once this invocation has spent that much: what
finished is in the cache, the run is marked failed ("budget reached"), and the same command
(with a larger budget) goes on from there. A cap cannot be enforced on answers whose tokens no
one counted (a server that sends no ``usage``, with no /tokenize and no ``--tokenizer``,
issue 47 item 9): the first backend call that brings one stops the run the same way, saying so.
A provider batch (``--batch``) is paid for whole once submitted, so it is costed before: its
requests' upper bound (the backend's ``cost_bound``) must fit what is left, and the requests
are split into batches that do (:mod:`.executor`); the run stops once the next request alone
would not fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..backends.base import Failed, Response
from ..errors import LocalevalError

BUDGET_CHUNK = 16  # requests per backend call under a budget: it stops close to the limit
MODEL = "model"  # the role of the run's own model


class BudgetReached(LocalevalError):
    """The run spent its --max-spend or --max-tokens-total; a rerun resumes."""

    exit_code = 4


@dataclass(frozen=True)
class Budget:
    """Prices (per million tokens) and the limits of one invocation; all optional."""

    price_in: float | None = None
    price_out: float | None = None
    max_spend: float | None = None
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        for name in ("price_in", "price_out", "max_spend", "max_tokens"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, int | float)
                                          and math.isfinite(value) and value >= 0):
                raise LocalevalError(f"{FLAGS[name]} must be a finite number, 0 or more, not "
                                     f"{value!r}")
        if self.max_spend is not None and self.price_in is None and self.price_out is None:
            raise LocalevalError("--max-spend needs --price in=…,out=… (per million tokens) "
                                 "to turn tokens into money")

    @property
    def limits(self) -> bool:
        return self.max_spend is not None or self.max_tokens is not None

    @property
    def priced(self) -> bool:
        return self.price_in is not None or self.price_out is not None

    def cost(self, prompt: int, completion: int) -> float:
        return (prompt * (self.price_in or 0) + completion * (self.price_out or 0)) / 1e6


FLAGS = {"price_in": "--price in", "price_out": "--price out", "max_spend": "--max-spend",
         "max_tokens": "--max-tokens-total"}
COUNTS = ("requests_run", "cache_hits", "prompt_tokens", "completion_tokens",
          "provider_cached_tokens", "sent_prompt_tokens", "sent_completion_tokens",
          "uncounted")


class Usage:
    """The counts by role, added to as answers come (from the cache or the backend)."""

    def __init__(self) -> None:
        self.roles: dict[str, dict[str, int]] = {}
        self.unmetered: dict[str, int] = {}  # by role: answers sent uncounted (not cached)

    def add(self, role: str, response: Response, cached: bool) -> None:
        if isinstance(response, Failed):
            return
        c = self.roles.setdefault(role, dict.fromkeys(COUNTS, 0))
        c["cache_hits" if cached else "requests_run"] += 1
        prompt, completion = response.n_prompt_tokens, response.n_completion_tokens
        if prompt is None and completion is None:
            c["uncounted"] += 1  # a backend that counts nothing (an embedding, a moderation)
            if not cached:
                self.unmetered[role] = self.unmetered.get(role, 0) + 1
        c["prompt_tokens"] += prompt or 0
        c["completion_tokens"] += completion or 0
        c["provider_cached_tokens"] += response.n_cached_tokens or 0
        if not cached:
            c["sent_prompt_tokens"] += prompt or 0
            c["sent_completion_tokens"] += completion or 0

    def sent(self) -> int:
        return sum(c["sent_prompt_tokens"] + c["sent_completion_tokens"]
                   for c in self.roles.values())

    def spent(self, budget: Budget) -> float:
        c = self.roles.get(MODEL)
        return budget.cost(c["sent_prompt_tokens"], c["sent_completion_tokens"]) if c else 0.0

    def check(self, budget: Budget | None) -> None:
        """BudgetReached once this invocation has spent its budget."""
        if budget is None or not budget.limits:
            return
        self._check_counted(budget)
        sent = self.sent()
        if budget.max_tokens is not None and sent >= budget.max_tokens:
            raise BudgetReached(f"budget reached: {sent} tokens sent, --max-tokens-total "
                                f"{budget.max_tokens}; the answers so far are cached: rerun "
                                "the command (with a larger budget) to go on")
        spent = self.spent(budget)
        if budget.max_spend is not None and spent >= budget.max_spend:
            raise BudgetReached(f"budget reached: {spent:.4f} spent, --max-spend "
                                f"{budget.max_spend:g}; the answers so far are cached: rerun "
                                "the command (with a larger budget) to go on")

    def _check_counted(self, budget: Budget) -> None:
        """BudgetReached once an answer this invocation sent came back with no token count:
        the cap cannot be enforced (--max-spend counts the run's model, --max-tokens-total
        every role)."""
        flag: str | None = None
        n = sum(self.unmetered.values())
        if budget.max_tokens is not None and n:
            flag = f"--max-tokens-total {budget.max_tokens}"
        if budget.max_spend is not None and self.unmetered.get(MODEL):
            flag, n = f"--max-spend {budget.max_spend:g}", self.unmetered[MODEL]
        if flag:
            raise BudgetReached(
                f"{flag} cannot be enforced: {n} answers came back with no token count (the "
                "server sends no usage and has no /tokenize); pass --tokenizer with the "
                "model's tokenizer or use a server that reports usage, or drop the cap; the "
                "answers so far are cached: rerun the command to go on")

    def left(self, budget: Budget) -> tuple[float | None, int | None]:
        """What this invocation may still spend: money (for the run's model) and tokens."""
        return (None if budget.max_spend is None else budget.max_spend - self.spent(budget),
                None if budget.max_tokens is None else budget.max_tokens - self.sent())

    def data(self) -> dict[str, dict[str, int]]:
        return {role: dict(c) for role, c in sorted(self.roles.items())}

    def results(self, budget: Budget | None) -> dict[str, Any]:
        """results.json's ``usage``, and ``cost`` with a price."""
        cost = self.cost(budget)
        return {"usage": self.data(), **({"cost": cost} if cost is not None else {})}

    def cost(self, budget: Budget | None) -> dict[str, Any] | None:
        """results.json's ``cost``: the run's model's tokens priced (None without a price)."""
        if budget is None or not budget.priced:
            return None
        c = self.roles.get(MODEL, dict.fromkeys(COUNTS, 0))
        return {"role": MODEL, "price_in": budget.price_in, "price_out": budget.price_out,
                "per": "million tokens",
                "total": budget.cost(c["prompt_tokens"], c["completion_tokens"]),
                "spent": budget.cost(c["sent_prompt_tokens"], c["sent_completion_tokens"])}
