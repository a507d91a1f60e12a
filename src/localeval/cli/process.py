"""The ``localeval`` command as a process of its own: the console script and ``python -m
localeval.cli`` run :func:`console`; tests and other callers run :func:`localeval.cli.main`."""

from __future__ import annotations

import gc


def console() -> int:
    """:func:`~localeval.cli.main`, then the heap frozen, so the interpreter's collections at
    exit skip the ~450,000 objects torch and transformers made: they took 1.4 s of a
    one-question ``hf:`` run's exit, 0.25 s frozen (bench/startup.py). Files and the cache are
    closed by then. Only here, where the process ends: a caller of ``main`` keeps its
    collector as it was."""
    from . import main

    try:
        return main()
    finally:
        gc.freeze()
