"""A real third-party server: llama.cpp (llama-cpp-python's OpenAI-compatible server) on the
same weights as the ``hf:`` backend, float32 GGUF. MCQ likelihood and a guard run through it must
agree with ``hf:``.

Tolerance. llama.cpp computes in float32 with its own kernels (ggml's matrix products sum in
another order than PyTorch's, and its softmax is its own), so the two agree to float32
rounding, not bit for bit: on this model the log-probs differ by about 2e-5 at most. ``TOL``
(1e-4 on a log-prob, and on a probability) leaves room for that; a letter or verdict must be
identical wherever the ``hf:`` margin exceeds it.
"""

from __future__ import annotations

import json

import pytest
from llama_cpp_server import LlamaCppServer, to_gguf

from localeval.cli import main

TOL = 1e-4
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gguf(tiny_llama, tmp_path_factory):
    """tiny_llama as GGUF, converted once (the converter imports torch): every server here
    serves this file."""
    return to_gguf(tiny_llama, tmp_path_factory.mktemp("gguf") / "tiny-f32.gguf")


@pytest.fixture(scope="module")
def server(gguf):
    s = LlamaCppServer(gguf)
    yield s
    s.stop()


def _samples(folder):
    return {s["id"]: s for s in map(json.loads, (folder / "samples.jsonl").open())}


def _both(server, tiny_llama, tmp_path, *args):
    remote = ["--model", "openai:tiny", "--base-url", server.url, "--top-logprobs", "49152"]
    assert main([*args, *remote, "--output", str(tmp_path / "llama.cpp"), "--quiet"]) == 0
    assert main([*args, "--model", f"hf:{tiny_llama}", "--output", str(tmp_path / "hf"),
                 "--quiet"]) == 0
    return _samples(tmp_path / "llama.cpp"), _samples(tmp_path / "hf")


def test_mcq_likelihood_agrees_with_hf(server, tiny_llama, shared, tmp_path):
    ours, hf = _both(server, tiny_llama, tmp_path, "run", "--task", "cmmlu", "--data",
                     str(shared / "data" / "cmmlu"), "--subjects", "agronomy,arts", "--limit",
                     "12")
    assert set(ours) == set(hf) and len(hf) == 24
    compared = 0
    for i, h in hf.items():
        o = ours[i]
        assert not o.get("failed") and set(o["logprobs"]) == set(h["logprobs"])
        assert max(abs(o["logprobs"][k] - h["logprobs"][k]) for k in h["logprobs"]) < TOL, i
        top = sorted(h["logprobs"].values(), reverse=True)
        if top[0] - top[1] > TOL:
            assert o["pred"] == h["pred"], i
            compared += 1
    assert compared >= 20


def test_echo_is_refused_where_llama_cpp_python_misaligns_it(server, shared, tmp_path):
    """llama-cpp-python 0.3's echo reads each prompt token's log-prob from the distribution
    after it when the prompt has no BOS, as this GGUF's (measured on one question: A -0.0004,
    D -0.00001 against hf:'s -24.1 and -16.9). So ``--scoring echo`` fails each question with
    that reason, never a number, and auto keeps the top-k (the default top 20 holds none of a
    random model's letters: failed, as before)."""
    common = ["run", "--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"), "--subjects",
              "arts", "--limit", "2", "--shots", "0", "--quiet", "--model", "openai:tiny",
              "--base-url", server.url]
    assert main([*common, "--scoring", "echo", "--output", str(tmp_path / "echo")]) == 3
    for s in _samples(tmp_path / "echo").values():
        assert s["error"].startswith("llama-cpp-python's echo misaligns"), s
    assert main([*common, "--output", str(tmp_path / "auto")]) == 3
    for s in _samples(tmp_path / "auto").values():
        assert "no candidate among the top 20" in s["error"], s


def test_guard_scores_agree_with_hf(server, tiny_llama, shared, tmp_path):
    """WildGuard's verdict tokens " yes" / " no" are single tokens of the tiny model's vocabulary
    (a server's top log-probs are looked up by token text; Llama Guard's "unsafe" is one token
    of its own vocabulary, not of SmolLM2's)."""
    ours, hf = _both(server, tiny_llama, tmp_path, "run", "--task", "safety-prompts", "--data",
                     str(shared / "data" / "xstest" / "xstest_prompts.csv"), "--limit", "16",
                     "--guard", "wildguard", "--guard-option", "label_scores=full")
    assert set(ours) == set(hf) and len(hf) == 16
    for i, h in hf.items():
        assert ours[i]["score"] == pytest.approx(h["score"], abs=TOL), i
        if abs(h["score"] - 0.5) > TOL:
            assert (ours[i]["score"] > 0.5) == (h["score"] > 0.5), i


def test_split_label_scored_by_its_first_token(server, tiny_llama, shared, tmp_path):
    """The zero-shot guard's "Harmful" is two tokens of SmolLM2's vocabulary ("Harm" + "ful"),
    "Safe" one: the server backend asks llama.cpp's /extras/tokenize for each label's first
    token and reads that token's log-prob, as ``hf:`` reads it, so no item fails."""
    ours, hf = _both(server, tiny_llama, tmp_path, "run", "--task", "safety-prompts", "--data",
                     str(shared / "data" / "xstest" / "xstest_prompts.csv"), "--limit", "16",
                     "--guard", "zero-shot", "--guard-option", "label_scores=full",
                     "--guard-option", "verdict_position=fixed")
    config = json.loads((tmp_path / "llama.cpp" / "config.json").read_text())
    assert config["backend"]["label_tokens"] == "server"
    assert set(ours) == set(hf) and len(hf) == 16
    failed = [i for i, s in ours.items() if "error" in s]
    assert not failed, ours[failed[0]]["error"]
    for i, h in hf.items():
        assert "error" not in h
        assert ours[i]["score"] == pytest.approx(h["score"], abs=TOL), i
        if abs(h["score"] - 0.5) > TOL:
            assert (ours[i]["score"] > 0.5) == (h["score"] > 0.5), i


def test_a_replica_that_dies_mid_run_leaves_the_run_whole(server, gguf, shared, tmp_path):
    """Two replicas; the second is killed (SIGKILL) after the run's 10th answer, with requests
    in flight. Each request that meets the dead replica goes to the other one at once: every
    question is answered once, none fails, the numbers are the one-server run's, and the
    timing says how many each replica served."""
    from localeval import evaluate
    from localeval.backends.openai_compat import OpenAIBackend

    second = LlamaCppServer(gguf)  # a second server process on the same (read-only) file

    class KilledAfterTen(OpenAIBackend):
        def run(self, requests, progress=None):
            done = []

            def hook(i, response):
                done.append(i)
                if len(done) == 10:
                    second.proc.kill()
                progress(i, response)

            return super().run(requests, hook)

    options = dict(task="cmmlu", data=str(shared / "data" / "cmmlu"), limit=20,
                   subjects=["agronomy", "arts"], quiet=True, store=False)
    both = KilledAfterTen("tiny", base_url=f"{server.url},{second.url}", top_logprobs=49152,
                          concurrency=4)
    try:
        record = evaluate(model=both, output=tmp_path / "two", **options)
    finally:
        second.stop()
    alone = evaluate(model=OpenAIBackend("tiny", base_url=server.url, top_logprobs=49152),
                     output=tmp_path / "one", **options)
    assert record.results["n_failed"] == 0 and len(record.samples) == 40
    served = record.results["timing"]["served_by"]
    origins = {u.removesuffix("/v1") for u in (server.url, second.url)}
    assert set(served) == origins and sum(served.values()) == 40, served
    assert min(served.values()) >= 1  # the second replica answered some before it died
    by_id = {s["id"]: s for s in alone.samples}
    assert all(s["pred"] == by_id[s["id"]]["pred"] for s in record.samples)
    assert record.results["metrics"] == alone.results["metrics"]
