"""The models of a run, by role: the run's own (``model``) and the second models a task needs
(``judge``, ``translator``; the dataset tools' ``embedder``), each with its own options.

A role's options are the run's backend options that its backend takes, overridden by the
role's own (``--role-option judge.device=cpu``). An option set on the command line that no model
of the run takes, a role option its backend does not take, and options for a role the task does
not have are each one clear error, before any model loads. A backend a run builds from its spec
is closed when the run ends (:func:`closed_with`).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, replace
from typing import Any

from ..errors import LocalevalError
from .base import Backend
from .config import BackendConfig, flags
from .hub import NotCached
from .registry import check_options, parse_backend_spec, preflight, taken_options

TARGET = "model"  # the role of the run's own model


@dataclass(frozen=True)
class Model:
    role: str
    spec: str | Backend  # a backend spec (kind:target), or a backend object used as it is
    config: BackendConfig

    @property
    def named(self) -> str | None:
        """The spec, when the model was named by one (config.json records it)."""
        return self.spec if isinstance(self.spec, str) else None

    def settings(self) -> dict[str, Any]:
        """What config.json records of a role: its spec and the options that can change a
        number."""
        return {"model": self.named, "options": BackendConfig.redacted(
            {k: v for k, v in self.config.changed().items() if k in self.config.settings()})}


def resolve_models(target: str | Backend, config: BackendConfig, roles: dict[str, Any],
                   role_options: Mapping[str, BackendConfig | Mapping[str, Any]] | None = None
                   ) -> list[Model]:
    """The run's models, target first, each with the options its backend takes."""
    role_options = role_options or {}
    unknown = sorted(set(role_options) - set(roles))
    if unknown:
        raise LocalevalError(f"--role-option {unknown[0]}.…: this task has no model role "
                             f"{unknown[0]!r} (its roles: {', '.join(roles) or 'none'})")
    models = [Model(TARGET, target, _taken(target, config))]
    for role, spec in roles.items():
        own = BackendConfig.of(role_options.get(role))
        if isinstance(spec, str):
            check_options(spec, own, f"the {role}")
        inherited = {k: v for k, v in _taken(spec, config).changed().items()
                     if k not in own.changed()}
        models.append(Model(role, spec, replace(own, **inherited)))
    _check_stray(config, [m.spec for m in models])
    return models


def preflight_models(models: list[Model], ways: Mapping[str, str] | None = None,
                     flags: Mapping[str, str] | None = None) -> None:
    """Every named model's cheap checks (its spec, options and source), before any loads.
    A model not on this machine is one line that says how to name a downloaded copy:
    ``ways``: role -> the whole way (a guard option); else ``flags``: role -> the option that
    names it (``--judge-model``; the run's own: ``--model``), followed by ``<kind>:<its folder>``."""
    for m in models:
        if not m.named:
            continue
        try:
            preflight(m.named, m.config, "the model" if m.role == TARGET else f"the {m.role}")
        except NotCached as e:
            raise NotCached(e.target, _way(m.role, m.named, ways or {}, flags or {}),
                            None if m.role == TARGET else m.role.replace("_", " ")) from None


def _way(role: str, spec: str, ways: Mapping[str, str], flags: Mapping[str, str]) -> str:
    """How to name a downloaded copy of ``role``'s model: ``--judge-model hf:<its folder>``."""
    if role in ways:
        return ways[role]
    folder = f"{parse_backend_spec(spec)[0]}:<its folder>"
    flag = {TARGET: "--model", **flags}.get(role)
    return f"{flag} {folder}" if flag else folder


def _taken(spec: str | Backend, config: BackendConfig) -> BackendConfig:
    """``config`` with only the fields ``spec``'s backend takes (a backend object: all)."""
    if not isinstance(spec, str):
        return config
    taken = set(taken_options(spec))
    return BackendConfig(**{k: v for k, v in config.changed().items() if k in taken})


def _check_stray(config: BackendConfig, specs: list[str | Backend]) -> None:
    named = [s for s in specs if isinstance(s, str)]
    if len(named) < len(specs):
        return  # a backend object takes what it takes
    taken = {name for spec in named for name in taken_options(spec)}
    stray = [name for name in config.changed() if name not in taken]
    if stray:
        kinds = ", ".join(f"{parse_backend_spec(s)[0]} ({s})" for s in named)
        raise LocalevalError(f"{flags(stray)}: not an option of the backend of any model of this run "
                             f"({kinds}); `localeval run --help` lists each backend's options")


def closed_with(run: ExitStack, model: Model, backend: Backend) -> Backend:
    """``backend``, loaded for ``model``; built from its spec, it is closed when ``run`` ends,
    finished or not (a vLLM engine shut down before interpreter exit); a caller's own object
    stays open."""
    if model.named:
        run.callback(_close, backend)
    return backend


def _close(backend: Backend) -> None:
    """A failure to close is one warning line: the run folder's status (finished, or failed
    with its error) is written by then, and the run's own error must not be hidden by it."""
    try:
        backend.close()
    except Exception as e:  # noqa: BLE001 - any engine's shutdown error
        print(f"warning: closing the {backend.identity.get('backend', 'model')} backend "
              f"failed: {type(e).__name__}: {e}", file=sys.stderr)
