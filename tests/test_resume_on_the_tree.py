"""A resumed run equals a clean run exactly on the prefix tree (issue 24 item 5). The tree over
the requests a resume still has to run differs from the tree over all of them; each row's
layout depends only on its own path, so every response must come out bit for bit the same
whatever subset the cache already holds. Checked directly (responses of the rest, for many
subsets, against the full run) and end to end (a likelihood run on the tree killed at ~30% and
~60%, resumed, against an uninterrupted one)."""

from __future__ import annotations

import random

import pytest
from test_failures import _cli, _resume_equals_clean
from tiny_models import make_model

from localeval.backends.base import Generate, ScoreNext
from localeval.backends.hf import HFBackend
from localeval.data.mcq_loaders import load_local
from localeval.tasks.prompts import PromptConfig, build_prompt

pytestmark = pytest.mark.slow


def _prompts(shared, per_subject: int) -> list:
    data = load_local(shared / "data" / "cmmlu", ["agronomy", "anatomy"])
    out = []
    for subject in ("agronomy", "anatomy"):
        dev, test = data[subject]["dev"], data[subject]["test"][:per_subject]
        out += [(build_prompt(item, dev[:5], subject, PromptConfig(style="lm-eval", shots=5)),
                 item) for item in test]
    return out


@pytest.mark.parametrize("kind", ["likelihood", "generation"])
def test_any_subset_of_requests_gives_the_same_responses(kind, shared, tmp_path):
    backend = HFBackend(str(make_model(tmp_path / "m", layers=2, tied=False)), device="cpu")
    if kind == "likelihood":
        requests = [ScoreNext(p, (" A", " B", " C", " D")) for p, _ in _prompts(shared, 20)]
    else:
        requests = [Generate(p, max_tokens=6 + len(item.question) % 5, stop=("\n\n",))
                    for p, item in _prompts(shared, 8)]
    full = [r.to_json() for r in backend.run(requests)]
    rng = random.Random(0)
    for share in (0.3, 0.45, 0.6):
        cached = set(rng.sample(range(len(requests)), int(share * len(requests))))
        rest = [i for i in range(len(requests)) if i not in cached]
        again = [r.to_json() for r in backend.run([requests[i] for i in rest])]
        assert again == [full[i] for i in rest], (kind, share)


def test_sigkill_a_likelihood_run_on_the_tree_then_resume(shared, tmp_path, tiny_llama,
                                                           monkeypatch):
    monkeypatch.setenv("LOCALEVAL_CACHE_COMMIT_SECONDS", "0")  # the kill points are row counts
    out = tmp_path / "run"
    argv = _cli("--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"), "--subjects",
                "agronomy,anatomy", "--limit", "60", "--model", f"hf:{tiny_llama}",
                "--batch-size", "2", "--output", str(out), "--quiet")
    _resume_equals_clean(argv, out, tmp_path / "clean", 120, kills=[36, 72])
