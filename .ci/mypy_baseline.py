"""mypy over the files pyproject.toml configures, against a baseline that can only shrink.

The package had hundreds of mypy errors when the type checker came into CI: they are listed in
.ci/mypy-baseline.txt, and CI fails when a change adds one, never when one goes. Each error is
kept as ``path: [code] message``, without its line number, so an edit above an old error does not
move it; a key that occurs twice is two errors (the baseline is a multiset).

Fails (exit 1) when
- an error occurs more often than the baseline allows (the new errors are printed as mypy
  printed them, with their line numbers);
- any error is in a module of pyproject.toml's strict override (records, metrics, declared,
  backends.base): those must be clean and are never baselined;
- mypy did not run properly: it crashed, a file does not parse, or pyproject.toml's mypy
  configuration has an unknown option or an unused section. That is not "0 errors".

Usage (the venv's python: mypy runs as ``python -m mypy``, the pinned mypy of that venv):
    .venv/bin/python .ci/mypy_baseline.py            # check, as .ci/run does
    .venv/bin/python .ci/mypy_baseline.py --update   # rewrite the baseline from today's errors

Plain stdlib, so that it runs before anything else is known to work.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / ".ci" / "mypy-baseline.txt"
PYPROJECT = ROOT / "pyproject.toml"
HEADER = """\
# mypy errors tolerated for now (.ci/mypy_baseline.py): CI fails when one is added, not when one
# goes. One error a line, "path: [code] message" without the line number; a line that appears
# twice is two errors. Modules of pyproject.toml's strict override are never listed here.
# Regenerate it after fixing errors, to shrink it:
#     .venv/bin/python .ci/mypy_baseline.py --update
"""

# "src/localeval/x.py:12: error: Message  [code]" (a column after the line when configured)
ERROR_LINE = re.compile(
    r"^(?P<path>[^:]+):(?P<line>\d+)(?::\d+)?: error: (?P<message>.*?)(?:  \[(?P<code>[\w-]+)\])?$")
SUMMARY_LINE = re.compile(r"^(Found (?P<count>\d+) errors? in \d+ files?|Success: no issues found)")


class MypyDidNotRun(Exception):
    """mypy crashed, stopped early or was misconfigured: its output says nothing about errors."""


def error_key(line: str) -> str | None:
    """``path: [code] message`` of one of mypy's error lines; None for any other line (a note,
    the summary)."""
    match = ERROR_LINE.match(line)
    if not match:
        return None
    path = match["path"].replace("\\", "/")
    return f"{path}: [{match['code'] or 'no-code'}] {match['message']}"


def errors_in(stdout: str) -> dict[str, list[str]]:
    """mypy's error lines by key, in mypy's order (a key with two errors has two lines)."""
    errors: dict[str, list[str]] = {}
    for line in stdout.splitlines():
        key = error_key(line)
        if key is not None:
            errors.setdefault(key, []).append(line)
    return errors


def check_ran(returncode: int, stdout: str, stderr: str) -> None:
    """Raises MypyDidNotRun unless mypy checked every file and reported what it found: exit 0 or
    1, nothing on stderr (where config errors go), no unused config section, and a summary line
    whose count is the number of error lines read (so that no error escapes the pattern)."""
    if returncode not in (0, 1):  # 2: a crash, a file that does not parse, a fatal config error
        raise MypyDidNotRun(f"mypy exited with {returncode}:\n{stdout}{stderr}")
    if stderr.strip():  # an unknown option goes there, and mypy checks on without it
        raise MypyDidNotRun(f"mypy's configuration (pyproject.toml):\n{stderr}")
    unused = [line for line in stdout.splitlines() if "unused section(s)" in line]
    if unused:
        raise MypyDidNotRun("pyproject.toml configures modules mypy never saw (remove them):\n"
                            + "\n".join(unused))
    summary = next((m for m in map(SUMMARY_LINE.match, stdout.splitlines()) if m), None)
    if summary is None:
        raise MypyDidNotRun(f"no summary line in mypy's output:\n{stdout}")
    found = int(summary["count"] or 0)
    read = sum(len(lines) for lines in errors_in(stdout).values())
    if found != read:
        raise MypyDidNotRun(f"mypy found {found} errors but {read} error lines were read:\n{stdout}")


def strict_patterns(pyproject_text: str) -> list[str]:
    """The module patterns of pyproject.toml's strict override (the override that sets
    disallow_untyped_defs), e.g. ``localeval.metrics.*``: read there, so the two cannot differ."""
    overrides = tomllib.loads(pyproject_text)["tool"]["mypy"].get("overrides", [])
    for override in overrides:
        if override.get("disallow_untyped_defs"):
            modules = override["module"]
            return [modules] if isinstance(modules, str) else list(modules)
    return []


def module_of(path: str) -> str:
    """``src/localeval/records/base.py`` -> ``localeval.records.base`` (a package's
    ``__init__.py`` is the package)."""
    parts = list(Path(path).with_suffix("").parts)
    if parts[0] == "src":  # pyproject's mypy_path: the src layout
        parts.pop(0)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_strict(key: str, patterns: list[str]) -> bool:
    """Whether the error ``key`` is in a module a pattern names; ``a.b.*`` is ``a.b`` and every
    module under it, as mypy reads the pattern."""
    module = module_of(key.partition(": ")[0])
    return any(module == pattern.removesuffix(".*")
               or (pattern.endswith(".*") and module.startswith(pattern[:-1]))
               for pattern in patterns)


def read_baseline(text: str) -> Counter[str]:
    return Counter(line for line in text.splitlines() if line.strip() and not line.startswith("#"))


def baseline_text(errors: dict[str, list[str]]) -> str:
    return HEADER + "".join(f"{key}\n" for key in sorted(errors) for _ in errors[key])


def new_errors(errors: dict[str, list[str]], baseline: Counter[str]) -> dict[str, list[str]]:
    """The keys that occur more often than the baseline allows, with all their lines (which of
    a key's lines is the new one cannot be told without line numbers)."""
    return {key: lines for key, lines in errors.items() if len(lines) > baseline[key]}


def gone_errors(errors: dict[str, list[str]], baseline: Counter[str]) -> Counter[str]:
    """Baseline entries that no longer occur (as many times): the baseline can shrink."""
    now = Counter({key: len(lines) for key, lines in errors.items()})
    return baseline - now


def run_mypy() -> str:
    """mypy over the configured files (pyproject.toml's ``files``), its stdout."""
    done = subprocess.run([sys.executable, "-m", "mypy", "--no-pretty"], cwd=ROOT,
                          capture_output=True, text=True)
    check_ran(done.returncode, done.stdout, done.stderr)
    return done.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--update", action="store_true",
                        help=f"rewrite {BASELINE.relative_to(ROOT)} from the current errors")
    args = parser.parse_args(argv)
    try:
        errors = errors_in(run_mypy())
    except MypyDidNotRun as e:
        print(f"mypy did not run properly: {e}", file=sys.stderr)
        return 1
    patterns = strict_patterns(PYPROJECT.read_text(encoding="utf-8"))
    strict = {key: lines for key, lines in errors.items() if is_strict(key, patterns)}
    errors = {key: lines for key, lines in errors.items() if key not in strict}
    baseline = read_baseline(BASELINE.read_text(encoding="utf-8")) if BASELINE.exists() \
        else Counter()
    count = sum(len(lines) for lines in errors.values())

    if args.update:
        BASELINE.write_text(baseline_text(errors), encoding="utf-8")
        print(f"mypy: {count} errors written to {BASELINE.relative_to(ROOT)} "
              f"(it held {baseline.total()})")
    else:
        print(f"mypy: {baseline.total()} errors in the baseline, {count} now")
    failed = bool(strict)
    if strict:
        n_strict = sum(len(lines) for lines in strict.values())
        print(f"\n{n_strict} errors in strictly typed modules ({', '.join(patterns)}), which "
              "are never baselined:")
        print("\n".join(line for lines in strict.values() for line in lines))
    if args.update:
        return int(failed)

    added = new_errors(errors, baseline)
    if added:
        failed = True
        print("\nNew errors (fix them: the baseline only shrinks):")
        for key, lines in added.items():
            if baseline[key]:
                print(f"[{len(lines)} of these now, {baseline[key]} in the baseline]")
            print("\n".join(lines))
    gone = gone_errors(errors, baseline)
    if gone:
        print(f"\nFixed, no longer in mypy's output ({gone.total()}); shrink the baseline with "
              "--update:")
        print("\n".join(f"{key}" + (f"  (x{n})" if n > 1 else "") for key, n in sorted(gone.items())))
    return int(failed)


if __name__ == "__main__":
    sys.exit(main())
