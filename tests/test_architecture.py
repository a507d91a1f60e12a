"""The shape of the package, checked from its source: one direction of imports, no circles,
small functions. docs/architecture.md draws the same layers."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "localeval"
# Bottom first. A module may import from its own layer or any layer below, never above.
LAYERS = [
    {"errors", "version", "progress", "declared", "options", "plugins", "words", "choices"},
    {"records"},
    {"data", "metrics"},
    {"backends"},
    {"analysis", "guards"},
    {"tasks"},
    {"store"},
    {"run"},  # the lifecycle only: nothing of the views, the report or the figures (finish.py)
    {"render"},
    {"views"},
    {"report"},
    {"web"},
    {"rescore", "merge", "finish"},
    {"api"},
    {"tools"},
    {"demo"},
    {"cli"},
    {"__init__"},
]


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


# Complexity and module length are a report CI prints (.ci/code_report.py), not a cap a test
# enforces: a cap made code pile up under it and be split or packed only to pass it.


# The one module that reads a results.json "schema" (to find the record type; the views' table
# keys views by the same constants); each schema string is declared once, in records/.
SCHEMA_READER = "records/__init__.py"
SCHEMA_LITERAL = re.compile(r"^localeval\.[a-z-]+/")


def _schema_reads(tree: ast.AST) -> list[int]:
    """Lines that read a "schema" key (x["schema"], x.get("schema")) or branch on a schema
    string (.startswith("localeval.…"))."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and \
                isinstance(node.slice, ast.Constant) and node.slice.value == "schema":
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("get", "startswith") and node.args and \
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) \
                and (node.args[0].value == "schema" or SCHEMA_LITERAL.match(node.args[0].value)):
            lines.append(node.lineno)
    return lines


def _declared_schemas() -> set[str]:
    """Every ``SCHEMA = "…"`` a records module declares."""
    return {node.value.value for path in (SRC / "records").glob("*.py")
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            and any(getattr(t, "id", None) == "SCHEMA" for t in node.targets)}


def test_only_the_records_read_a_results_schema():
    schemas, found = _declared_schemas(), []
    assert len(schemas) >= 4
    for path in sorted(SRC.rglob("*.py")):
        rel = str(path.relative_to(SRC))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if rel != SCHEMA_READER:
            found += [f"{rel}:{line}" for line in _schema_reads(tree)]
        # a results schema string appears only where its record declares it
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in schemas and \
                    not rel.startswith("records/"):
                found.append(f"{rel}:{node.lineno} {node.value!r}")
    assert not found


# Where a module is imported by name at run time, and why: the backend and guard tables and
# the plugin tables they are (a backend's or guard's heavy dependencies, or another package's,
# load only when it is asked for), and the probes of
# optional dependencies; `localeval guards` finds each guard's source file (importlib's
# find_spec of a top-level package, which imports nothing) to read it as text. Everywhere else
# an import is a plain import statement, so the import graph the tests above check is the one
# that runs.
DYNAMIC_IMPORTS = {"backends/registry.py", "guards/registry.py", "backends/hf/attention.py",
                   "backends/embedding.py", "plugins.py", "guards/catalog.py"}


def _dynamic_import_lines(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        name = node.id if isinstance(node, ast.Name) else \
            node.attr if isinstance(node, ast.Attribute) else None
        if name in ("import_module", "__import__", "importlib"):
            lines.append(node.lineno)
        # an import path written as a string ("localeval.views.mcq:MCQView")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                re.fullmatch(r"localeval(\.\w+)+(:\w+)?", node.value):
            lines.append(node.lineno)
    return lines


def test_modules_are_imported_by_name_only_in_the_tables_that_say_why():
    found = [f"{path.relative_to(SRC)}:{line}" for path in sorted(SRC.rglob("*.py"))
             if str(path.relative_to(SRC)) not in DYNAMIC_IMPORTS
             for line in _dynamic_import_lines(ast.parse(path.read_text(encoding="utf-8")))]
    assert not found
    assert all((SRC / rel).exists() for rel in DYNAMIC_IMPORTS)


def test_no_private_name_is_imported_across_modules():
    crossing = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(
                    "localeval")):
                crossing += [f"{path.relative_to(SRC)}: {a.name}" for a in node.names
                             if a.name.startswith("_") and not a.name.startswith("__")]
    assert not crossing


def test_the_layers_are_the_ones_docs_architecture_draws():
    text = (SRC.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    drawn = next(line for line in text.splitlines() if line.startswith("cli ─"))
    layers = [set(part.replace(" ", "").split(",")) for part in drawn.split("─")]
    assert layers[::-1] == [layer - {"__init__"} for layer in LAYERS if layer != {"__init__"}]


def test_every_backend_declares_its_features_on_backend_base():
    """Each backend kind subclasses BackendBase, so what it offers beyond run() (preflight,
    max_context, count_tokens …) is declared with a default, never probed with hasattr."""
    from localeval.backends.base import Backend as BackendBase
    from localeval.backends.registry import BACKENDS, backend_class

    loose = [kind for kind in BACKENDS if not issubclass(backend_class(f"{kind}:x"), BackendBase)]
    assert not loose
