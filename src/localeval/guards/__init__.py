"""Guard adapters: (prompt, response?) -> Requests -> P(harmful). See :mod:`.base`."""

from .base import Guard, GuardVerdict, available_guards, get_guard, run_guard

__all__ = ["Guard", "GuardVerdict", "available_guards", "get_guard", "run_guard"]
