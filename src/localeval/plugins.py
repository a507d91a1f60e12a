"""Tables of named parts (guards, backends, tasks) that list without importing: each part is
named by where it lives, ``"package.module:Class"``, and imported only when it is used. Another
package adds its own through an entry point in its metadata (the groups ``localeval.guards``,
``localeval.backends``, ``localeval.tasks``)::

    # the other package's pyproject.toml
    [project.entry-points."localeval.guards"]
    my-guard = "my_package.guards:MyGuard"

Entry points are read from the installed distributions' metadata (``entry_points.txt``), not by
importing them, so ``localeval --help`` lists another package's guard without loading it (nor
torch, nor numpy). A name that a built-in part has is refused for a plugin (one warning line,
the built-in stays): a package cannot change what ``--guard llamaguard3`` means.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points

from .errors import LocalevalError

GUARD_GROUP, BACKEND_GROUP, TASK_GROUP = "localeval.guards", "localeval.backends", "localeval.tasks"
GROUPS = (GUARD_GROUP, BACKEND_GROUP, TASK_GROUP)
BUILT_IN = "localeval"


@dataclass(frozen=True)
class Part:
    """A named part: ``target`` is ``"module:attribute"``, ``origin`` the distribution that
    declares it (``localeval`` for a built-in)."""

    name: str
    target: str
    origin: str = BUILT_IN

    @property
    def built_in(self) -> bool:
        return self.origin == BUILT_IN

    def load(self) -> object:
        """The part itself, its module imported now; a plugin that cannot be imported (any
        error its import raises, or its sys.exit) is one line naming it and its package."""
        module, _, attribute = self.target.partition(":")
        try:
            found: object = importlib.import_module(module)
            for name in attribute.split(".") if attribute else ():
                found = getattr(found, name)
        except SystemExit as e:  # its import calls sys.exit: not ours to end the run on
            raise LocalevalError(f"{self._named()} cannot be loaded: it exited "
                                 f"(sys.exit({e.code!r}))") from None
        except Exception as e:  # noqa: BLE001 - another package's import: any failure of it
            # (ImportError, a RuntimeError or SyntaxError of its own) one line, its first
            lines = str(e).strip().splitlines()
            raise LocalevalError(f"{self._named()} cannot be loaded: {type(e).__name__}"
                                 + (f": {lines[0]}" if lines else "")) from None
        return found

    def _named(self) -> str:
        return f"{self.name!r} ({self.target}, from {self.origin})"


def table(group: str, built_in: dict[str, str]) -> dict[str, Part]:
    """The parts of ``group``: the built-in ones (name -> ``"module:attribute"``), then those
    other packages declare, in the order of their names."""
    parts = {name: Part(name, target) for name, target in built_in.items()}
    for part in declared(group):
        if part.name not in parts:
            parts[part.name] = part
        elif parts[part.name].origin != part.origin:
            print(f"warning: {part.origin} declares {group.rsplit('.', 1)[1][:-1]} "
                  f"{part.name!r}, a name localeval or another package already has; it is "
                  "left out", file=sys.stderr)
    return parts


@cache
def declared(group: str) -> tuple[Part, ...]:
    """The parts other packages declare in ``group``, by name (read once per process)."""
    if group not in GROUPS:
        raise ValueError(f"unknown plugin group {group!r}")
    parts = []
    for point in sorted(entry_points(group=group), key=lambda p: p.name):
        origin = point.dist.name if point.dist is not None else "an unnamed package"
        if origin == BUILT_IN:  # localeval's own, should it ever declare them so
            continue
        parts.append(Part(point.name, point.value, origin))
    return tuple(parts)
