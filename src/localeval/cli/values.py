"""How the command line's text becomes values: comma-separated lists, and ``KEY=VALUE`` pairs
with one typing rule for every option that takes them (--model-args, --guard-option,
--judge-option, --role-option, -T)."""

from __future__ import annotations

from typing import Any

from ..errors import LocalevalError


def comma_list(value: str | None) -> list[str] | None:
    """A comma-separated option as a list (None when empty)."""
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def numbers(value: str, option: str) -> list[float]:
    try:
        return [float(k) for k in comma_list(value) or []]
    except ValueError:
        raise LocalevalError(f"{option} must be comma-separated numbers, not {value!r}") from None


def typed(value: str) -> Any:
    """The one typing rule of a KEY=VALUE value: none, true and false (any case) become None,
    True and False; integers and decimals become numbers; anything else stays text."""
    text = value.strip()
    low = text.lower()
    if low in ("none", "true", "false"):
        return {"none": None, "true": True, "false": False}[low]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def key_values(pairs: list[str], option: str) -> dict[str, Any]:
    """Repeated ``KEY=VALUE`` options as a dict: keys with dashes as underscores, values
    :func:`typed`."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise LocalevalError(f"{option} {pair!r}: write KEY=VALUE")
        out[key.strip().replace("-", "_")] = typed(value)
    return out


def model_args(text: str | None) -> dict | None:
    """``--model-args KEY=VALUE,KEY=VALUE`` (lm-eval's form)."""
    if not text:
        return None
    pairs = text.split(",")
    for pair in pairs:
        if "=" not in pair or not pair.partition("=")[0].strip():
            raise LocalevalError(f"--model-args {pair!r}: write KEY=VALUE,KEY=VALUE")
    return key_values(pairs, "--model-args")


def batch_size(value: str) -> int | str:
    if value == "auto":
        return value
    try:
        return int(value)
    except ValueError:
        raise LocalevalError(f"--batch-size must be 'auto' or an integer, not {value!r}") from None
