"""``localeval guards``: every guard, built-in and other packages', with its family, where it
comes from and its options, read from the modules' source text (:mod:`ast`), never by
importing them: listing guards loads no guard module, no torch, no plugin.

A built-in guard's options are its family's declaration (:mod:`.options`, which imports no
guard): each ``name=default``, a choice's other values after it (``reading=iris|parallax``).
Another package's guard declares its ``Options`` the same way, read here from its source text
(its class's annotated fields and their bases'); one written before options were declared lists
its ``__init__`` keywords (and, on a language model, ``label_scores`` and ``verdict_position``),
as the registry reads them. The family is read from the class's bases.
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..plugins import Part
from .options import OPTIONS, options_line
from .registry import FINE_TUNES, UPSTREAM, checkpoints_of, guard_table

# every guard on a language model's, set apart from its class (registry.get_guard)
STAGED_OPTIONS = ("label_scores=top-k|full|top-N", "verdict_position=authors'|fixed")
# a base class in a guard's ancestry -> its family, the first found wins
FAMILIES = {"StagedGuard": "language model", "ModerationGuard": "moderation API"}
OTHER = "classifier"  # its own classify(): an API, a head, rules


@dataclass(frozen=True)
class GuardRow:
    name: str
    family: str
    source: str  # "owner/repo path@commit" (built-in), "package NAME" (a plugin), or ours
    options: tuple[str, ...]  # "name=default", "name" when it has none
    target: str  # "module:Class"
    checkpoints: tuple[str, ...] = ()  # the Hub ids --guard also takes for it

    def data(self) -> dict[str, object]:
        return {"guard": self.name, "family": self.family, "from": self.source,
                "options": list(self.options), "class": self.target,
                "checkpoints": list(self.checkpoints)}


def guard_rows() -> list[GuardRow]:
    """A row per guard, in ``--guard``'s order (the built-in ones, then the plugins')."""
    return [_row(part) for part in guard_table().values()]


def _row(part: Part) -> GuardRow:
    module, _, name = part.target.partition(":")
    chain = _ancestry(module, name)
    names = [cls.name for cls, _ in chain]
    family = next((FAMILIES[n] for n in names if n in FAMILIES), OTHER if chain else "unknown")
    declared = next((_declared_options(cls, where) for cls, where in chain
                     if _options_of(cls) is not None), None)
    options = declared if declared is not None else \
        next((_init_options(cls, where) for cls, where in chain if _init(cls) is not None), ())
    if declared is None and "StagedGuard" in names:
        options = (*options, *STAGED_OPTIONS)
    if part.built_in:
        tune = FINE_TUNES.get(part.name)
        options = options_line(OPTIONS[tune.family if tune else part.name])
        source = UPSTREAM.get(part.name, "localeval (its own wording)")
    else:
        source = f"package {part.origin}"
    if not chain:  # its source cannot be read without importing it (a compiled module)
        options = ("(source not readable)",)
    return GuardRow(part.name, family, source, tuple(options), part.target,
                    checkpoints_of(part.name) if part.built_in else ())


def _ancestry(module: str, name: str, depth: int = 0) -> list[tuple[ast.ClassDef, str]]:
    """The class ``module:name`` and its bases, depth first, each with its module, as far as
    their source files can be found (a base from outside Python source ends the chain)."""
    found = _find_class(module, name) if depth < 12 else None
    if found is None:
        return []
    cls, where = found
    chain = [found]
    for base in cls.bases:
        base_name = base.id if isinstance(base, ast.Name) else \
            base.attr if isinstance(base, ast.Attribute) else None
        if base_name:
            chain += _ancestry(where, base_name, depth + 1)
    return chain


def _find_class(module: str, name: str, depth: int = 0) -> tuple[ast.ClassDef, str] | None:
    """The class ``name`` defined in ``module``, or imported there (``from .base import
    Guard``, a package's ``__init__`` re-exporting it), followed to where it is defined."""
    path = _module_file(module)
    tree = _parsed(path) if path else None
    if tree is None or depth > 12:
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node, module
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    package = module if path and path.name == "__init__.py" else \
                        module.rpartition(".")[0]
                    for _ in range(max(node.level - 1, 0)):
                        package = package.rpartition(".")[0]
                    source = (node.module or "") if node.level == 0 else \
                        ".".join(p for p in (package, node.module) if p)
                    return _find_class(source, alias.name, depth + 1)
    return None


def _module_file(module: str) -> Path | None:
    """The source file of ``module``, found from its top-level package's location alone:
    ``find_spec`` of a top-level name imports nothing (of ``a.b``, it would import ``a``)."""
    top, *rest = module.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if not rest:
        origin = Path(spec.origin) if spec.origin else None
        return origin if origin and origin.suffix == ".py" else None
    for location in spec.submodule_search_locations or ():
        base = Path(location, *rest)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


@cache
def _parsed(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


def _init(cls: ast.ClassDef) -> ast.FunctionDef | None:
    return next((n for n in cls.body if isinstance(n, ast.FunctionDef)
                 and n.name == "__init__"), None)


def _init_options(cls: ast.ClassDef, module: str) -> tuple[str, ...]:
    """``__init__``'s parameters after ``self``, each ``name=default``: a default named by a
    constant of its module (``max_tokens=MAX_TOKENS``) shown as that constant's value."""
    path = _module_file(module)
    tree = _parsed(path) if path else None
    constants = {t.id: n.value for n in (tree.body if tree else ())
                 if isinstance(n, ast.Assign | ast.AnnAssign) and isinstance(n.value, ast.Constant)
                 for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                 if isinstance(t, ast.Name)}

    def shown(default: ast.expr) -> str:
        if isinstance(default, ast.Name) and default.id in constants:
            default = constants[default.id]
        return ast.unparse(default)
    init = _init(cls)
    if init is None:
        return ()
    args = init.args
    positional = [*args.posonlyargs, *args.args][1:]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    pairs = [*zip(positional, defaults, strict=True),
             *zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    return tuple(a.arg if d is None else f"{a.arg}={shown(d)}" for a, d in pairs)


def _options_of(cls: ast.ClassDef) -> str | None:
    """The name of the ``Options`` class a guard class declares (``Options = KeywordOptions``),
    or None."""
    for node in cls.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value  # type: ignore[assignment]
        else:
            continue
        if isinstance(target, ast.Name) and target.id == "Options" and \
                isinstance(value, ast.Name):
            return value.id
    return None


def _declared_options(cls: ast.ClassDef, module: str) -> tuple[str, ...]:
    """The fields of the ``Options`` class that ``cls`` declares, its bases' first (as a
    dataclass orders them), each ``name=default``: a default given to ``option(...)`` as its
    first argument, or assigned as it is."""
    name = _options_of(cls)
    chain = _ancestry(module, name) if name else []
    fields: dict[str, str] = {}
    for options_class, _ in reversed(chain):
        for node in options_class.body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and \
                    node.value is not None:
                value = node.value
                if isinstance(value, ast.Call) and value.args:
                    value = value.args[0]
                fields[node.target.id] = ast.unparse(value)
    return tuple(f"{k}={v}" for k, v in fields.items())
