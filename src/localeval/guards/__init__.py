"""Guards: conversations in, P(harmful) out. See :mod:`.base` and, for model guards, :mod:`.staged`."""

from .base import Conversation, Guard, GuardVerdict
from .registry import available_guards, get_guard

__all__ = ["Conversation", "Guard", "GuardVerdict", "available_guards", "get_guard"]
