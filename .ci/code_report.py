"""What the code's shape looks like, printed by CI for a reader, never failing it: the functions
by cyclomatic complexity (radon), the longest modules, and the one-line forms that squeeze code
(packed assignments ``a, b = x, y`` and conditional expressions), per 1,000 code lines.

    .venv/bin/python .ci/code_report.py [--top N] [--json] [--src FOLDER]

Complexity and length are a reviewer's prompt, not a gate: a cap that fails a test made code
pile up under it and be split or packed only to pass it (issue 46). A number here is a place to
look; whether a long function reads better split is the reviewer's call.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from radon.complexity import cc_visit

SRC = Path(__file__).resolve().parents[1] / "src" / "localeval"
BANDS = ((1, 5), (6, 10), (11, 15), (16, 20), (21, 30), (31, None))  # None: no upper end


@dataclass(frozen=True)
class Module:
    path: str
    lines: int  # all lines
    code_lines: int  # lines that are neither blank nor only a comment
    packed_assignments: int  # a, b = x, y: several names given several values in one statement
    conditional_expressions: int  # x if c else y
    chained_conditionals: int  # x if c else y if d else z: a conditional inside another


@dataclass(frozen=True)
class Function:
    where: str  # path:name
    complexity: int


def measure(path: Path, root: Path) -> tuple[Module, list[Function]]:
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    code = [line for line in text.splitlines() if line.strip() and
            not line.strip().startswith("#")]
    packed = sum(1 for node in ast.walk(tree) if isinstance(node, ast.Assign)
                 and isinstance(node.targets[0], ast.Tuple) and isinstance(node.value, ast.Tuple))
    conditionals = [node for node in ast.walk(tree) if isinstance(node, ast.IfExp)]
    chained = sum(1 for node in conditionals
                  if any(isinstance(part, ast.IfExp) for part in (node.body, node.orelse)))
    rel = str(path.relative_to(root))
    functions = [Function(f"{rel}:{block.fullname}", block.complexity)
                 for block in cc_visit(text) if hasattr(block, "fullname")]
    return Module(rel, len(text.splitlines()), len(code), packed, len(conditionals),
                  chained), functions


def band_label(low: int, high: int | None) -> str:
    return f"{low}-{high}" if high is not None else f"{low}+"


def band_of(complexity: int) -> str:
    for low, high in BANDS:
        if complexity >= low and (high is None or complexity <= high):
            return band_label(low, high)
    raise ValueError(f"complexity {complexity} is below every band")


def report(root: Path = SRC) -> dict:
    modules, functions = [], []
    for path in sorted(root.rglob("*.py")):
        module, found = measure(path, root)
        modules.append(module)
        functions += found
    code = sum(m.code_lines for m in modules) or 1
    bands = Counter(band_of(f.complexity) for f in functions)
    return {
        "modules": len(modules), "code_lines": code, "functions": len(functions),
        "complexity_bands": {band_label(lo, hi): bands[band_label(lo, hi)] for lo, hi in BANDS},
        "per_1000_code_lines": {
            name: round(1000 * sum(getattr(m, name) for m in modules) / code, 1)
            for name in ("packed_assignments", "conditional_expressions",
                         "chained_conditionals")},
        "most_complex": [asdict(f) for f in sorted(functions, key=lambda f: -f.complexity)],
        "longest": [asdict(m) for m in sorted(modules, key=lambda m: -m.lines)],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=15, help="rows of each list (default 15)")
    parser.add_argument("--json", action="store_true", help="the whole report as JSON")
    parser.add_argument("--src", type=Path, default=SRC, help="the package folder to measure "
                        "(default: this checkout's src/localeval)")
    args = parser.parse_args(argv)
    found = report(args.src)
    if args.json:
        print(json.dumps(found, indent=1))
        return 0
    rates = found["per_1000_code_lines"]
    print(f"code report: {found['modules']} modules, {found['code_lines']} code lines, "
          f"{found['functions']} functions (information only; nothing here fails CI)")
    print("functions by cyclomatic complexity: "
          + ", ".join(f"{band}: {n}" for band, n in found["complexity_bands"].items()))
    print(f"per 1,000 code lines: {rates['packed_assignments']} packed assignments, "
          f"{rates['conditional_expressions']} conditional expressions, "
          f"{rates['chained_conditionals']} of them chained")
    print(f"most complex {args.top}:")
    for f in found["most_complex"][:args.top]:
        print(f"  {f['complexity']:>3}  {f['where']}")
    print(f"longest {args.top} modules (lines, code lines):")
    for m in found["longest"][:args.top]:
        print(f"  {m['lines']:>4} {m['code_lines']:>4}  {m['path']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
