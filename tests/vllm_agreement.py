"""How the vLLM tests (test_vllm.py, test_vllm_defaults.py) compare a run with ``hf:``'s on the
same seeded weights: ``TOL`` on a log-prob (test_vllm.py's docstring says why 1e-3), and the
multiple-choice comparison both make."""

from __future__ import annotations

import json
from pathlib import Path

TOL = 1e-3


def samples(folder: Path) -> dict[str, dict]:
    return {s["id"]: s for s in map(json.loads, (folder / "samples.jsonl").open())}


def assert_mcq_agrees(ours: dict[str, dict], hf: dict[str, dict],
                      scoring: str | None = None) -> None:
    """The 24 questions all scored (by ``scoring``, when given), each option's log-prob within
    TOL of ``hf:``'s, and the same letter wherever ``hf:``'s margin exceeds TOL (20 at least)."""
    assert set(ours) == set(hf) and len(hf) == 24
    compared = 0
    for i, h in hf.items():
        assert "error" not in ours[i] and scoring in (None, ours[i].get("scoring")), ours[i]
        assert max(abs(ours[i]["logprobs"][k] - v) for k, v in h["logprobs"].items()) < TOL, i
        top = sorted(h["logprobs"].values(), reverse=True)
        if top[0] - top[1] > TOL:
            assert ours[i]["pred"] == h["pred"], i
            compared += 1
    assert compared >= 20
