"""Guards: conversations in, P(harmful) out. See :mod:`.base` and, for model guards, :mod:`.staged`."""

from ..options import option
from .base import Conversation, Guard, GuardVerdict
from .options import GuardOptions
from .registry import available_guards, get_guard

__all__ = ["Conversation", "Guard", "GuardOptions", "GuardVerdict", "available_guards",
           "get_guard", "option"]
