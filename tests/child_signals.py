"""For a child process a test stops with SIGINT or SIGHUP: both back to their defaults in it.
A suite started in the background (``cmd &`` in a script ignores SIGINT; ``nohup`` ignores
SIGHUP) passes those ignored signals on to every child, whose interpreter then raises nothing
on them: the test would measure its parent's shell, not the command."""

from __future__ import annotations

import signal


def default_stop_signals() -> None:
    """``preexec_fn`` of the child: SIGINT and SIGHUP as a terminal would deliver them."""
    for signum in (signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
