"""The openai backend behind a proxy that injects every fault a deployment throws: after it,
every question is identical to a clean run or recorded as failed (none lost, none duplicated,
none silently different), a second run completes them all, and the API key appears nowhere."""

from __future__ import annotations

import json

import pytest
from fault_proxy import FAULTS, FaultProxy
from openai_server import ModelServer

from localeval.cli import main

KEY = "sk-test-secret-123-planted"


@pytest.fixture(scope="module")
def server(tiny_llama):
    s = ModelServer(tiny_llama, api_key=KEY)
    yield s
    s.stop()


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("FAULT_TEST_KEY", KEY)


def _run(shared, url, out, *more):
    return main(["run", "--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"),
                 "--subjects", "arts,agronomy", "--limit", "8", "--model", "openai:tiny",
                 "--base-url", url, "--api-key-env", "FAULT_TEST_KEY", "--top-logprobs", "49152",
                 "--timeout", "3", "--output", str(out), "--quiet", *more])


def _samples(folder):
    return {s["id"]: s for s in map(json.loads, (folder / "samples.jsonl").open())}


def _same_answer(a: dict, b: dict) -> bool:
    return a["pred"] == b["pred"] and all(abs(a["logprobs"][k] - b["logprobs"][k]) < 1e-6
                                          for k in b["logprobs"])


@pytest.mark.slow
def test_every_fault_is_retried_to_the_clean_answer(server, key, shared, tmp_path):
    # the clean run needs no short deadline (that is for the proxy's stalls): on a busy
    # machine 3 s can pass before the server answers
    assert _run(shared, server.url, tmp_path / "clean", "--timeout", "60") == 0
    clean = _samples(tmp_path / "clean")
    proxy = FaultProxy(server.url, schedule=list(FAULTS) * 2, slow_s=4,
                       once_per_request=True)
    try:
        assert _run(shared, proxy.url, tmp_path / "faulty", "--max-retries", "4",
                    "--concurrency", "4") == 0
    finally:
        proxy.stop()
    faulty = _samples(tmp_path / "faulty")
    assert set(faulty) == set(clean) and len(faulty) == 16  # none lost, none duplicated
    assert all(_same_answer(faulty[i], clean[i]) for i in clean)  # none silently different
    assert {f for f in proxy.seen if f != "ok"} == set(FAULTS)
    results = json.loads((tmp_path / "faulty" / "results.json").read_text())
    assert results["timing"]["retries"] == len(FAULTS) * 2  # one per fault
    assert results["metrics"] == json.loads((tmp_path / "clean" / "results.json").read_text()
                                            )["metrics"]


@pytest.mark.slow
def test_failures_are_recorded_then_completed_and_the_key_never_leaks(server, key, shared,
                                                                      tmp_path, capfd):
    out = tmp_path / "run"
    argv = ("--max-retries", "0", "--concurrency", "1")
    proxy = FaultProxy(server.url, schedule=["echo_key", "500", "drop", "non_json"] * 3)
    try:
        assert _run(shared, proxy.url, out, *argv) == 3  # failures exit non-zero
        first = _samples(out)
        failed = [s for s in first.values() if s.get("failed")]
        assert len(failed) == 12 and all(s["correct"] is None for s in failed)
        assert any("HTTP 502" in s["error"] and "[key]" in s["error"] for s in failed)
        printed = capfd.readouterr()
        sent = len(proxy.seen)
        assert _run(shared, proxy.url, out, *argv) == 0  # the same command, faults over
        assert len(proxy.seen) - sent == 12  # only the failed ones are asked again
        printed2 = capfd.readouterr()
    finally:
        proxy.stop()
    # the clean run needs no short deadline (that is for the proxy's stalls): on a busy
    # machine 3 s can pass before the server answers
    assert _run(shared, server.url, tmp_path / "clean", "--timeout", "60") == 0
    again, clean = _samples(out), _samples(tmp_path / "clean")
    assert set(again) == set(clean) and all(_same_answer(again[i], clean[i]) for i in clean)
    assert not any(s.get("failed") for s in again.values())
    # The planted key: in no file of the run folder, and in nothing printed.
    for path in out.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    for text in (printed.out, printed.err, printed2.out, printed2.err):
        assert KEY not in text
