"""A resumed run equals a clean run exactly on the prefix tree (issue 24 item 5). The tree over
the requests a resume still has to run differs from the tree over all of them; each row's
layout depends only on its own path, so every response must come out bit for bit the same
whatever subset the cache already holds. Checked directly (responses of the rest, for many
subsets, against the full run) and end to end (a likelihood run on the tree killed at ~30% and
~60%, resumed, against an uninterrupted one)."""

from __future__ import annotations

import random
import time

import pytest
from test_failures import _cli, _resume_equals_clean
from tiny_models import make_model

from localeval.backends.base import Generate, ScoreNext, response_from_json, response_json
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


@pytest.fixture(scope="module")
def untied(tmp_path_factory):
    """The subset tests' model (untied: varied text), made once for both kinds."""
    return make_model(tmp_path_factory.mktemp("untied") / "m", layers=2, tied=False)


@pytest.mark.parametrize("kind", ["likelihood", "generation"])
def test_any_subset_of_requests_gives_the_same_responses(kind, shared, untied):
    backend = HFBackend(str(untied), device="cpu")
    if kind == "likelihood":
        requests = [ScoreNext(p, (" A", " B", " C", " D")) for p, _ in _prompts(shared, 20)]
    else:
        requests = [Generate(p, max_tokens=6 + len(item.question) % 5, stop=("\n\n",))
                    for p, item in _prompts(shared, 8)]
    full = [response_json(r) for r in backend.run(requests)]
    rng = random.Random(0)
    for share in (0.3, 0.45, 0.6):
        cached = set(rng.sample(range(len(requests)), int(share * len(requests))))
        rest = [i for i in range(len(requests)) if i not in cached]
        again = [response_json(r) for r in backend.run([requests[i] for i in rest])]
        assert again == [full[i] for i in rest], (kind, share)


def test_sigkill_a_likelihood_run_on_the_tree_then_resume(shared, tmp_path, tiny_llama,
                                                           monkeypatch):
    monkeypatch.setenv("LOCALEVAL_CACHE_COMMIT_SECONDS", "0")  # the kill points are row counts
    out = tmp_path / "run"
    argv = _cli("--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"), "--subjects",
                "agronomy,anatomy", "--limit", "60", "--model", f"hf:{tiny_llama}",
                "--batch-size", "2", "--output", str(out), "--quiet")
    _resume_equals_clean(argv, out, tmp_path / "clean", 120, kills=[36, 72])


# ---------------------------------------------------------------- issue 33 item 6
# The issue's scenario: a 4-layer, hidden-256 random Llama around the SmolLM2 tokenizer,
# CMMLU marketing + virology, 5 shots, likelihood, the default batch size: 349 requests. Before,
# a resume planned its tree over the requests left, so rows were split at other points than in
# the clean run: 25 of 349 samples differed in the last bits (|Δ log-prob| up to 9.5e-7).
ISSUE_SUBJECTS = ("marketing", "virology")


def _issue_requests(shared) -> list[ScoreNext]:
    data = load_local(shared / "data" / "cmmlu", list(ISSUE_SUBJECTS))
    config = PromptConfig(style="lm-eval", shots=5)
    return [ScoreNext(build_prompt(item, data[s]["dev"][:5], s, config), (" A", " B", " C", " D"))
            for s in ISSUE_SUBJECTS for item in data[s]["test"]]


def _issue_argv(shared, model, out) -> list[str]:
    return _cli("--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"), "--subjects",
                ",".join(ISSUE_SUBJECTS), "--shots", "5", "--method", "likelihood", "--model",
                f"hf:{model}", "--output", str(out), "--quiet")


@pytest.fixture(scope="module")
def issue_model(tmp_path_factory):
    """The issue's model, made once for both tests below."""
    return make_model(tmp_path_factory.mktemp("issue") / "m", layers=4, hidden=256)


def test_the_rest_of_a_cached_run_is_computed_as_the_clean_run_did(shared, tmp_path,
                                                                   issue_model):
    """Through the executor, as a resumed run goes: a cache holding the clean run's responses
    for a subset (the first k finished, and random subsets), the rest computed now must equal
    the clean run's bit for bit."""
    from localeval.store.cache import RequestCache
    from localeval.store.executor import CachedExecutor

    model = issue_model
    requests = _issue_requests(shared)
    assert len(requests) == 349
    full = [response_json(r) for r in HFBackend(str(model), device="cpu").run(requests)]
    rng = random.Random(0)
    subsets = [list(range(105)), rng.sample(range(len(requests)), 200)]
    for n, cached in enumerate(subsets):
        backend = HFBackend(str(model), device="cpu")
        with RequestCache(tmp_path / f"c{n}.sqlite") as cache:
            cache.put_many(backend.identity,
                           [(requests[i], response_from_json(requests[i], full[i]))
                            for i in cached])
            execute = CachedExecutor(backend, cache, True, "questions")
            again = [response_json(r) for r in execute(requests)]
        assert execute.counts == {"requests_cached": len(cached),
                                  "requests_run": 349 - len(cached)}
        differ = [i for i in range(349) if again[i] != full[i]]
        assert differ == [], (n, len(differ))


def test_kill_the_issues_run_at_several_points_then_resume(shared, tmp_path, monkeypatch,
                                                           issue_model):
    """End to end: SIGKILL once >= 105 of the 349 requests are cached, SIGTERM later, resume;
    the samples equal an uninterrupted run's byte for byte."""
    import json
    import signal
    import subprocess

    from test_failures import _rows

    monkeypatch.setenv("LOCALEVAL_CACHE_COMMIT_SECONDS", "0")  # the kill points are row counts
    out = tmp_path / "run"
    argv = _issue_argv(shared, issue_model, out)
    for rows, how in ((105, signal.SIGKILL), (230, signal.SIGTERM)):
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while _rows(out / "cache.sqlite") < rows and proc.poll() is None:
            time.sleep(0.02)
        proc.send_signal(how)
        proc.wait()
        assert rows <= _rows(out / "cache.sqlite") < 349
    kept = _rows(out / "cache.sqlite")
    done = subprocess.run(argv, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    timing = json.loads((out / "results.json").read_text())["timing"]
    assert (timing["requests_cached"], timing["requests_run"]) == (kept, 349 - kept)
    clean = tmp_path / "clean"
    assert subprocess.run([*argv[:-3], "--output", str(clean), "--quiet"]).returncode == 0
    assert (out / "samples.jsonl").read_bytes() == (clean / "samples.jsonl").read_bytes()
