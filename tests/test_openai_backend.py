"""The openai backend against a loopback OpenAI-compatible server running a real model."""

import json

import pytest
from openai_server import ModelServer

from localeval.api import evaluate
from localeval.backends.base import Generate, ScoreNext
from localeval.backends.hf import HFBackend
from localeval.backends.openai_compat import OpenAIBackend
from localeval.errors import LocalevalError


@pytest.fixture(scope="module")
def server(tiny_llama):
    s = ModelServer(tiny_llama, api_key="sk-test-secret-123")
    yield s
    s.stop()


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("TEST_SERVER_KEY", "sk-test-secret-123")


@pytest.mark.slow
def test_same_predictions_as_local_backend_one_request_per_question(server, tiny_llama, shared,
                                                                    key, tmp_path):
    common = dict(task="cmmlu", data=shared / "data" / "cmmlu", subjects=["arts"], limit=12,
                  shots=5, prompt_style="lm-eval", quiet=True)
    # A random model spreads its mass over the whole vocabulary, so ask for all of it (a
    # trained model's letters sit in the top 20; vLLM's --max-logprobs raises its limit).
    remote = OpenAIBackend("tiny", base_url=server.url, api_key_env="TEST_SERVER_KEY",
                           concurrency=1, top_logprobs=49152)  # 1: arrival order is send order
    server.received.clear()
    theirs = evaluate(model=remote, output=tmp_path / "remote", **common)
    ours = evaluate(model=f"hf:{tiny_llama}", **common)
    assert len(server.received) == 12  # one request per question, not one per option
    assert server.received == sorted(server.received)  # prefix neighbours sent together
    for a, b in zip(theirs.samples, ours.samples):
        assert a["pred"] == b["pred"]
        for letter, value in a["logprobs"].items():
            assert abs(value - b["logprobs"][letter]) < 1e-4
    # the key reached the server but nowhere in what we write
    assert server.headers_seen[-1]["Authorization"] == "Bearer sk-test-secret-123"
    for f in (tmp_path / "remote").iterdir():
        assert "sk-test-secret" not in f.read_text()
    assert "sk-test" not in json.dumps(remote.identity)


@pytest.mark.slow
def test_chat_prefill_and_generation(server, tiny_llama, key):
    remote = OpenAIBackend("tiny", base_url=server.url, api_key_env="TEST_SERVER_KEY",
                           top_logprobs=49152)
    local = HFBackend(str(tiny_llama))
    msgs = [{"role": "user", "content": "一加一？"}, {"role": "assistant", "content": "正確答案：("}]
    reqs = [ScoreNext(msgs, ("A", "B")), Generate("問題：一加一？\n", max_tokens=6, stop=("\n",))]
    r_remote, r_local = remote.run(reqs), local.run(reqs)
    assert "<|im_start|>user\n一加一？<|im_end|>\n<|im_start|>assistant\n正確答案：(" in server.received
    for c in ("A", "B"):
        assert abs(r_remote[0].logprobs[c] - r_local[0].logprobs[c]) < 1e-4
    assert r_remote[1].text == r_local[1].text


@pytest.mark.slow
def test_retries_then_succeeds_and_errors_are_recorded(tiny_llama, key):
    s = ModelServer(tiny_llama, api_key="sk-test-secret-123", fail_first=2)
    try:
        b = OpenAIBackend("tiny", base_url=s.url, api_key_env="TEST_SERVER_KEY", max_retries=3,
                          top_logprobs=49152)
        assert b.run([ScoreNext("問題：", (" A", " B"))])[0].error is None
        s.fail_left = 10
        b.max_retries = 1
        out = b.run([ScoreNext("問題：", (" A", " B"))])[0]
        assert out.error and "HTTP 503" in out.error
    finally:
        s.stop()


@pytest.mark.slow
def test_unreachable_server_and_unknown_model(server):
    with pytest.raises(LocalevalError, match="cannot reach"):
        OpenAIBackend("tiny", base_url="http://127.0.0.1:9/v1", timeout=2)
    with pytest.raises(LocalevalError, match="does not serve model 'other'"):
        OpenAIBackend("other", base_url=server.url)


@pytest.mark.slow
def test_candidates_outside_top_k(server, key):
    """Outside the top-k a candidate is None (ranked last); with none inside, the request fails
    with the reason, and the MCQ sample counts as unanswered rather than guessed."""
    b = OpenAIBackend("tiny", base_url=server.url, api_key_env="TEST_SERVER_KEY", top_logprobs=2)
    out = b.run([ScoreNext("問題：", (" A", " B"))])[0]
    assert out.error and "top 2" in out.error
