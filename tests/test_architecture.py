"""The shape of the package, checked from its source: one direction of imports, no circles,
small functions. docs/architecture.md draws the same layers."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "localeval"
# Bottom first. A module may import from its own layer or any layer below, never above.
LAYERS = [
    {"errors", "version", "progress"},
    {"data", "metrics"},
    {"backends"},
    {"analysis", "guards"},
    {"tasks"},
    {"store"},
    {"report"},
    {"views"},
    {"run"},
    {"api"},
    {"tools"},
    {"demo"},
    {"cli"},
    {"__init__"},
]
MAX_COMPLEXITY = 15  # radon's cyclomatic complexity, per function
LONG_MODULE = 300  # lines; a longer module says why at its top ("over 300 lines: ...")


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every localeval module ``name`` imports, at any depth of the file (lazy imports too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            target = (f"{base}.{node.module}" if node.module else base) if node.level \
                else node.module
            found.add(target)
            found |= {f"{target}.{a.name}" for a in node.names}
    return {m for m in found if m in modules and m != name}


def _layer(module: str) -> int:
    parts = module.split(".")
    room = parts[1] if len(parts) > 1 else "__init__"
    return next(i for i, layer in enumerate(LAYERS) if room in layer)


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_every_module_has_a_layer(graph):
    for module in graph:
        _layer(module)  # StopIteration names a module missing from LAYERS


def test_no_import_runs_back_up_the_layers(graph):
    upward = [f"{a} -> {b}" for a, targets in graph.items() for b in targets
              if _layer(b) > _layer(a)]
    assert not upward


def test_no_import_circles(graph):
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    circles = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                circles.append(" -> ".join(path[path.index(nxt):] + [node, nxt]))
            elif nxt not in state:
                visit(nxt, path + [node])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [])
    assert not circles


def test_functions_are_small():
    radon = pytest.importorskip("radon.complexity")
    big = [f"{path.relative_to(SRC)}:{block.name} {block.complexity}"
           for path in sorted(SRC.rglob("*.py"))
           for block in radon.cc_visit(path.read_text(encoding="utf-8"))
           if block.complexity > MAX_COMPLEXITY]
    assert not big


def test_long_modules_say_why():
    silent = [str(path.relative_to(SRC)) for path in sorted(SRC.rglob("*.py"))
              if len(path.read_text(encoding="utf-8").splitlines()) > LONG_MODULE
              and f"over {LONG_MODULE} lines" not in (ast.get_docstring(
                  ast.parse(path.read_text(encoding="utf-8"))) or "")]
    assert not silent
