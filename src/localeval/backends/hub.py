"""Where a model comes from, checked in a blink before anything loads: a local folder that is
not there, or a Hub model while the Hub cannot be reached and the model is not in the local
cache, is one clear line (instead of the Hub client's retries and its "Repo id must be in the
form ..." for a mistyped path)."""

from __future__ import annotations

import os
from pathlib import Path

from ..data.hub import hub_unreachable
from ..errors import LocalevalError


def looks_like_path(target: str) -> bool:
    """A folder, not a Hub id (``namespace/name``): absolute, relative with ./ or ../, ~, or
    more than one slash."""
    return target.startswith(("/", "./", "../", "~", ".\\")) or target.count("/") > 1


def check_model_source(target: str, revision: str | None = None) -> None:
    """Raise one line when the model cannot be loaded from where ``target`` points."""
    if Path(target).expanduser().exists():
        return
    if looks_like_path(target):
        raise LocalevalError(f"model folder {target} not found")
    if not hub_unreachable():
        return
    os.environ["HF_HUB_OFFLINE"] = "1"  # no retries: load from the local cache or fail at once
    from huggingface_hub import try_to_load_from_cache

    if not isinstance(try_to_load_from_cache(target, "config.json", revision=revision), str):
        raise LocalevalError(f"cannot reach the Hugging Face Hub and {target!r} is not in the "
                             "local cache; connect, or download it on another machine and pass "
                             "hf:<its folder>")
