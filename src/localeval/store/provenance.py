"""What every config.json starts with: the versions that made the run and its command line,
every secret on it redacted."""

from __future__ import annotations

import platform
from typing import Any

from ..backends.config import BackendConfig
from ..backends.secrets import redact_command
from ..version import __version__


def run_provenance(command: list[str] | None) -> dict[str, Any]:
    """What every config.json starts with: versions and the command line, every secret on it
    redacted: URLs' user information and secret query parameters, secret keys of dict options
    (:mod:`.backends.secrets`, declared in :class:`BackendConfig`)."""
    shown = redact_command(command, BackendConfig.secret_keys()) if command else command
    return {"localeval_version": __version__, "python": platform.python_version(),
            "packages": _package_versions(), "command": shown}


def _package_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("torch", "transformers", "tokenizers", "datasets"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            pass
    return out
