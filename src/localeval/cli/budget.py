"""``run``'s price and budget flags: ``--price in=X,out=Y`` (per million tokens),
``--max-spend`` and ``--max-tokens-total`` (:mod:`..store.usage`)."""

from __future__ import annotations

import argparse

from ..declared import key_value_pairs, parse_declared
from ..errors import LocalevalError
from ..store.usage import Budget

PRICE_KEYS = ("in", "out")


def add_budget_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("tokens and cost")
    group.add_argument("--price", metavar="in=X,out=Y", help="price of the run's model per "
                       "million prompt (in) and completion (out) tokens: results.json and the "
                       "report give the run's cost")
    group.add_argument("--max-spend", type=float, metavar="AMOUNT", help="stop the run once "
                       "this invocation has spent this much at --price (the answers so far "
                       "stay cached: the same command goes on)")
    group.add_argument("--max-tokens-total", type=int, metavar="N", help="stop the run once "
                       "this invocation has sent N tokens (prompt + completion, every model "
                       "of the run); the same command goes on")


def price(text: str | None) -> tuple[float | None, float | None]:
    """``in=X,out=Y`` as two numbers (either may be left out)."""
    if not text:
        return None, None
    texts = key_value_pairs(text, "--price")
    unknown = sorted(set(texts) - set(PRICE_KEYS))
    if unknown:
        raise LocalevalError(f"--price takes in=… and out=… (per million tokens), not "
                             f"{', '.join(unknown)}")
    values = {key: parse_declared("float", value, f"--price {key}")
              for key, value in texts.items()}  # a number per million tokens
    return values.get("in"), values.get("out")


def budget_of(args: argparse.Namespace) -> Budget | None:
    """The run's Budget from its flags; None when none is given."""
    price_in, price_out = price(getattr(args, "price", None))
    max_spend = getattr(args, "max_spend", None)
    max_tokens = getattr(args, "max_tokens_total", None)
    if (price_in, price_out, max_spend, max_tokens) == (None, None, None, None):
        return None
    return Budget(price_in, price_out, max_spend, max_tokens)
