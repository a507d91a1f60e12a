"""Issue 52 item 7: every ```bash block of README.md and of the guides it links (issue 68:
tests/readme_docs.py, in that order) runs as written, in order, in one shell,
in a folder laid out as a checkout (its `src/`, `../shared` beside it) with a `.venv` whose
`localeval` is this checkout's: what a block reads, an earlier block made, and the examples'
model is the `$MODEL` the README sets (the demo's random model). A block that needs what a test
cannot have (a GPU, the Hub, a real API key, a vLLM server, an install) is marked
`<!-- readme-test: skip (why) -->` on the line before it. No mocks: each block runs for real.
Each block's wall time is printed (pytest -s), for the README's expected times."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from readme_docs import DOCS, README
from tiny_models import REPO, SHARED

SKIP = re.compile(r"<!-- readme-test: skip \((.+?)\) -->")


def readme_blocks() -> list[tuple[str, int, str, str | None]]:
    """(file, line, text, why skipped) of each ```bash block of the README and the guides, in
    order."""
    blocks = []
    for path in DOCS:
        lines = path.read_text(encoding="utf-8").splitlines()
        name, i = path.relative_to(REPO).as_posix(), 0
        while i < len(lines):
            if lines[i].strip() == "```bash":
                start, body = i + 1, []
                i += 1
                while lines[i].strip() != "```":
                    body.append(lines[i])
                    i += 1
                indent = len(lines[start - 1]) - len(lines[start - 1].lstrip())
                skip = SKIP.search(lines[start - 2]) if start >= 2 else None
                blocks.append((name, start, "\n".join(b[indent:] for b in body),
                               skip.group(1) if skip else None))
            i += 1
    return blocks


def test_every_readme_block_runs_or_says_why_it_cannot():
    blocks = readme_blocks()
    assert len(blocks) >= 15
    for name, line, text, why in blocks:
        assert why is None or len(why) > 10, (name, line, why)
        # a literal optional part (`[--json]`) fails when pasted
        assert not re.search(r"\s\[--?[a-z]", text), (name, line, text)


def checkout(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A folder laid out as a fresh checkout after the README's set-up: `src/`, `../shared`,
    and a `.venv/bin` with `activate` and a `localeval` that run this checkout's code."""
    root = tmp_path / "localeval"
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / "src").symlink_to(REPO / "src")
    (tmp_path / "shared").symlink_to(SHARED)
    venv_bin = root / ".venv" / "bin"
    shim = venv_bin / "localeval"
    shim.write_text(f'#!/bin/sh\nPYTHONPATH="{REPO / "src"}" exec "{sys.executable}" '
                    f'-m localeval.cli "$@"\n')
    shim.chmod(0o755)
    (venv_bin / "python").symlink_to(sys.executable)
    (venv_bin / "activate").write_text(f'PATH="{venv_bin}:$PATH"; export PATH\n')
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(home),
           "XDG_DATA_HOME": str(home / ".local/share"), "XDG_CACHE_HOME": str(home / ".cache"),
           "LANG": "C.UTF-8", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HF_HOME": str(home / ".cache/huggingface"), "COLUMNS": "120"}
    for name in ("LOCALEVAL_SHARED", "TMPDIR"):
        if name in os.environ:
            env[name] = os.environ[name]
    return root, env


@pytest.mark.slow
def test_the_readme_blocks_run_as_written(tmp_path):
    root, env = checkout(tmp_path)
    script = ["set -euo pipefail"]
    ran = []
    for n, (name, line, text, why) in enumerate(readme_blocks()):
        if why:
            continue
        ran.append(line)
        script += [f'echo "@@block {n} {name}:{line} start $EPOCHREALTIME" >&2', text,
                   f'echo "@@block {n} {name}:{line} end $EPOCHREALTIME" >&2']
    done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=root, env=env,
                          capture_output=True, text=True, timeout=3600)
    marks = re.findall(r"@@block (\d+) (\S+) (start|end) ([\d.]+)", done.stderr)
    starts = {b: float(t) for b, _, kind, t in marks if kind == "start"}
    for b, where, kind, t in marks:
        if kind == "end":
            print(f"block at {where}: {float(t) - starts[b]:.0f} s")
    assert done.returncode == 0, (marks[-1:], done.stderr[-4000:])
    assert len([m for m in marks if m[2] == "end"]) == len(ran)


def test_the_readme_gives_the_examples_expected_times_on_two_cores():
    """Issue 53 item 4 (part), issue 68: the README gives the expected time of its examples
    and of each guide's on a 2-core CPU (measured; the numbers are the README's, no test
    asserts a time): each file whose blocks the test runs is named in its table."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Expected times", 1)[1].split("\n## ", 1)[0]
    assert "measured on 2 CPU cores" in " ".join(section.split())
    for name in {name for name, _, _, why in readme_blocks() if why is None}:
        assert f"`{name}`" in section, name
