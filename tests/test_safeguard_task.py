"""The safeguard task end to end on the shared data, with a seeded random tiny model."""

from __future__ import annotations

import json
import math

import pytest
from rich.console import Console

from localeval.analysis.choices import AnalysisChoices
from localeval.analysis.safety import analyses
from localeval.api import evaluate
from localeval.backends.base import Direct, Failed
from localeval.backends.failures import Unclassified
from localeval.backends.hf import HFBackend
from localeval.data.safety import SafetyItem
from localeval.demo.safety import SAMPLE_SAFETY, run_safety_demo
from localeval.guards import get_guard
from localeval.records import read_results
from localeval.report.console import print_results
from localeval.tasks import safeguard
from localeval.tasks.safety_items import limit_items, load_safety_items


@pytest.fixture(scope="module")
def backend(tiny_llama):
    return HFBackend(str(tiny_llama), device="cpu")


# The whole distribution: the tiny random model's labels are not among its top 2 tokens, so the
# authors' top-2 reading (the default, test_label_scores.py) would score none of these samples;
# read at the first generated position, not the first of 100 whose top 2 holds a label (issue 49
# item 1), which a random model never reaches.
FULL = {"label_scores": "full", "verdict_position": "fixed"}


def _by_kind(samples, kind, context="with_prompt"):
    return [s for s in samples if s["kind"] == kind and s["context"] == context]


@pytest.mark.slow
def test_xstest_prompts_zero_shot(backend, shared, tmp_path):
    data = shared / "data" / "xstest" / "xstest_prompts.csv"
    result = evaluate(guard_options=FULL, task="safety-prompts", model=backend, data=data, output=tmp_path / "run",
                      cache=tmp_path / "cache.sqlite", quiet=True)
    r = result.results
    assert r["schema"] == "localeval.safety/1" and r["n_samples"] == 450 and r["n_failed"] == 0
    (row,) = r["per_language"]
    assert (row["kind"], row["lang"], row["n"], row["n_harmful"]) == ("prompt", "en", 450, 200)
    assert 0 <= row["low"] <= row["auprc"] <= row["high"] <= 1
    # issue 69: XSTest has no cultural-cg subset, so its label-policy line names none
    assert r["label_policy"] == {"prompt": "prompt classification: sensitive items counted as "
                                           "harmful (the authors' code, IRIS "
                                           "get_eval_result.py); 1 = harmful"}
    for name in ("config.json", "results.json", "samples.jsonl"):
        assert (tmp_path / "run" / name).exists()
    lines = (tmp_path / "run" / "samples.jsonl").read_text().splitlines()
    assert len(lines) == 450 and all(0 <= json.loads(x)["score"] <= 1 for x in lines)
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["guard"]["name"] == "zero-shot" and config["classify"] == ["prompt"]
    # A second run reads every request back from the cache: same scores, byte for byte.
    again = evaluate(guard_options=FULL, task="safety-prompts", model=backend, data=data, cache=tmp_path / "cache.sqlite",
                            quiet=True)
    assert [s["score"] for s in again.samples] == [s["score"] for s in result.samples]


@pytest.mark.slow
def test_multilingual_jbb_language_gap(backend, shared):
    data = shared / "data" / "jbb-multilingual" / "prompts.jsonl"
    result = evaluate(guard_options=FULL, task="safety-prompts", model=backend, guard="llamaguard3", data=data,
                             limit=10, quiet=True, n_resamples=200)
    r = result.results
    assert r["n_failed"] == 0, r["failures"][:3]
    langs = {row["lang"] for row in r["per_language"]}
    assert langs == {"en", "zh", "th", "vi", "ar", "ko", "bn"}
    en = [row for row in r["per_language"] if row["lang"] == "en"][0]
    assert en["n"] == 10 and en["n_harmful"] == 5  # limit keeps both labels
    gaps = {row["lang"]: row for row in r["language_gap"]}
    assert set(gaps) == langs - {"en"} | {"avg"}
    th = gaps["th"]
    assert math.isclose(th["gap"], th["en"] - th["sea"]) and th["low"] <= th["high"]


@pytest.mark.slow
def test_xstest_completions_as_responses(backend, shared):
    data = shared / "data" / "xstest" / "model_completions"
    result = evaluate(guard_options=FULL, task="safety-responses", model=backend, data=data, limit=2, quiet=True,
                      n_resamples=0)  # 2 items from each of the five source models
    samples = result.samples
    assert {s["kind"] for s in samples} == {"response"}
    with_p, without = _by_kind(samples, "response"), _by_kind(samples, "response",
                                                              "without_prompt")
    assert len(with_p) == len(without) == 10
    assert all(s["score"] is not None for s in samples)
    assert result.results["label_policy"]["response"].endswith("1 = harmful")


@pytest.mark.slow
def test_failed_requests_are_counted_and_excluded(backend):
    """A backend response that failed gives score None: counted in n_failed, never safe."""
    class Flaky:
        identity = {"backend": "flaky", "model": "flaky"}

        def run(self, requests, progress=None):
            out = backend.run(requests)
            return [Failed(Unclassified("server timeout")) if i % 3 == 0 else r
                    for i, r in enumerate(out)]

    items = [SafetyItem(id=str(i), subset="general", lang="en", prompt=f"question {i}?",
                        prompt_label="harmful" if i % 2 else "safe") for i in range(9)]
    guard = get_guard("zero-shot", **FULL)
    planned = safeguard.plan(items, ["prompt"], guard)
    verdicts = guard.classify([p.conversation() for p in planned], Direct(Flaky()))
    records = [safeguard.record(p, v, guard="zero-shot", model="flaky")
               for p, v in zip(planned, verdicts)]
    failed = [r for r in records if r["score"] is None]
    assert len(failed) == 3 and all("server timeout" in r["error"] for r in failed)

    results = analyses(records, AnalysisChoices(n_resamples=0))
    (row,) = results["per_language"]
    assert row["n"] == 6 and row["n_failed"] == 3


@pytest.mark.slow
def test_failures_reach_results(backend, shared, monkeypatch):
    class Flaky:
        identity = {"backend": "flaky", "model": "flaky"}

        def run(self, requests, progress=None):  # reports nothing: its return value counts
            return [Failed(Unclassified("boom")) if i == 0 else r
                    for i, r in enumerate(backend.run(requests))]

    data = shared / "data" / "xstest" / "xstest_prompts.csv"
    r = evaluate(guard_options=FULL, task="safety-prompts", model=Flaky(), data=data, limit=10, quiet=True,
                        n_resamples=0).results
    assert r["n_failed"] == 1 and r["per_language"][0]["n"] == 9
    assert r["failures"][0]["error"] == "backend error: boom" and "1 of 10" in r["warnings"][0]


@pytest.mark.slow
def test_sensitive_policy_and_sample_items(backend):
    items = load_safety_items("sea-safeguard", _sample_path())
    assert {i.lang for i in items} == {"en", "id", "ms", "my", "th", "ta", "tl", "vi"}
    assert {i.subset for i in items} == {"general", "cultural-itw", "cultural-cg"}
    r = evaluate(guard_options=FULL, task="sea-safeguard", model=backend, data=_sample_path(), sensitive="exclude",
                        quiet=True, n_resamples=0).results
    # One sensitive prompt (EN + local) and one sensitive response (EN + local, judged with and
    # without the prompt).
    assert r["n_excluded"] == 6
    assert "excluded (override)" in r["label_policy"]["response"]
    cols = r["table2"]["columns"]
    assert r["table2"]["rows"][0]["values"][cols[0]] is not None
    assert r["pair_type_confusion"] and r["cultural_gap"]
    console = Console(record=True, width=160)
    print_results(read_results(r.data()), console)
    assert "Table 2 layout" in console.export_text()


def test_limit_spreads_over_ids_and_keeps_pairs():
    items = [SafetyItem(id=f"{i}", subset="s", lang=lang, prompt="p", prompt_label="safe")
             for i in range(10) for lang in ("en", "th")]
    kept = limit_items(items, 3)
    assert sorted({i.id for i in kept}) == ["0", "3", "6"] and len(kept) == 6


@pytest.mark.slow
def test_safety_demo_runs(tmp_path):
    console = Console(record=True, width=160)
    run_safety_demo(tmp_path, console, quiet=True)
    text = console.export_text()
    assert "RANDOM" in text and "Table 2 layout" in text
    assert (tmp_path / "sea-safeguard" / "results.json").exists()


def _sample_path():
    return str(SAMPLE_SAFETY)
