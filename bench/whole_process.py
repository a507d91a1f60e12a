"""Timing a whole process (start-up included), as every peer benchmark here measures."""

from __future__ import annotations

import os
import subprocess
import time


def timed(cmd: list[str], env: dict) -> tuple[float, float]:
    """Run a whole process; return (wall seconds, peak RSS in MiB) of that process alone."""
    wall, rss, _ = timed_usage(cmd, env)
    return wall, rss


def timed_usage(cmd: list[str], env: dict) -> tuple[float, float, float]:
    """(wall seconds, peak RSS in MiB, CPU seconds: user + system) of a whole process. On a
    machine shared with other work the CPU seconds move less than the wall time."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    stderr = proc.stderr.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"command failed: {' '.join(cmd)}\n{stderr[-3000:]}")
    return wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def trie_tokens(token_lists: list[list[int]]) -> int:
    """The node count of the token trie of these sequences: every distinct token prefix once,
    the fewest tokens any harness can forward to score them all (sorted, each sequence adds
    what it does not share with the one before it)."""
    total, previous = 0, []
    for ids in sorted(map(list, token_lists)):
        shared = 0
        for a, b in zip(ids, previous):
            if a != b:
                break
            shared += 1
        total += len(ids) - shared
        previous = ids
    return total
