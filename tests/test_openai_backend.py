"""The openai backend against a loopback OpenAI-compatible server running a real model, and
against one that trickles its reply (a timeout is a deadline for the whole request)."""

import json

import pytest
from misbehaving_server import Misbehaving, serve_misbehaving
from openai_server import ModelServer

from localeval.api import evaluate
from localeval.backends.base import Failed, Generate, ScoreNext, error_of, request_key
from localeval.backends.config import BackendConfig
from localeval.backends.hf import HFBackend
from localeval.backends.label_tokens import LabelTokenError, ServerTokens
from localeval.backends.openai_compat import OpenAIBackend
from localeval.backends.registry import check_options
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
    # no tokenize endpoints: the two failures meet the scoring request, not the label probe
    s = ModelServer(tiny_llama, api_key="sk-test-secret-123", fail_first=2, tokenize=False)
    try:
        b = OpenAIBackend("tiny", base_url=s.url, api_key_env="TEST_SERVER_KEY", max_retries=3,
                          top_logprobs=49152)
        assert error_of(b.run([ScoreNext("問題：", (" A", " B"))])[0]) is None
        s.fail_left = 10
        b.max_retries = 1
        out = b.run([ScoreNext("問題：", (" A", " B"))])[0]
        assert isinstance(out, Failed) and "HTTP 503" in out.error
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
    assert isinstance(out, Failed) and "top 2" in out.error


# ------------------------------------------------------------------ label tokens
# "Harmful" is "Harm" + "ful" in SmolLM2's vocabulary, "Safe" one token: a server's top
# log-probs hold "Harm", never "Harmful".
SPLIT = ScoreNext("問題：", ("Harmful", "Safe"))
ALL = 49152  # the whole vocabulary: a random model's "Harm" is anywhere in it


@pytest.fixture(scope="module")
def hf_split(tiny_llama):
    (response,) = HFBackend(str(tiny_llama)).run([SPLIT])
    return response.logprobs


def test_split_candidate_is_read_by_its_first_token_via_the_server(server, key, hf_split):
    """vLLM's /tokenize gives "Harmful"'s first token id, and its top log-probs are asked keyed
    by id; the key goes with the calls (the test server refuses a call without it, which would
    leave "whole text")."""
    b = OpenAIBackend("tiny", base_url=server.url, api_key_env="TEST_SERVER_KEY",
                      top_logprobs=ALL)
    assert b.identity["label_tokens"] == "server token ids"
    (out,) = b.run([SPLIT])
    assert error_of(out) is None and set(out.logprobs) == {"Harmful", "Safe"}  # keyed by candidate
    for c in SPLIT.candidates:
        assert abs(out.logprobs[c] - hf_split[c]) < 1e-4


def test_thai_labels_whose_first_token_is_a_byte_are_found_by_id(server, key, tiny_llama):
    """Under byte-level BPE the first token of a Thai word is a byte of a character; servers
    name all such tokens "" or "\ufffd", so by text they cannot be told apart. By id (vLLM's
    return_tokens_as_token_ids) they are, and the log-probs are hf's."""
    thai = ScoreNext("คำถาม:\n", ("ปลอดภัย", "เสี่ยง"))  # first tokens: bytes of ป, เ
    (local,) = HFBackend(str(tiny_llama)).run([thai])
    b = OpenAIBackend("tiny", base_url=server.url, api_key_env="TEST_SERVER_KEY",
                      top_logprobs=ALL)
    (out,) = b.run([thai])
    assert error_of(out) is None, out.error
    for c in thai.candidates:
        assert abs(out.logprobs[c] - local.logprobs[c]) < 1e-4


def test_without_tokenize_endpoints_candidates_are_whole_texts(tiny_llama, hf_split):
    s = ModelServer(tiny_llama, tokenize=False)
    try:
        b = OpenAIBackend("tiny", base_url=s.url, top_logprobs=ALL)
        (out,) = b.run([SPLIT])
    finally:
        s.stop()
    assert b.identity["label_tokens"] == "whole text"
    assert out.logprobs["Harmful"] is None  # never among the top tokens by its whole text
    assert abs(out.logprobs["Safe"] - hf_split["Safe"]) < 1e-4


def test_a_named_tokenizer_wins_and_keys_the_cache_apart(server, key, tiny_llama, hf_split):
    kw = dict(base_url=server.url, api_key_env="TEST_SERVER_KEY", top_logprobs=ALL)
    named = OpenAIBackend("tiny", tokenizer=str(tiny_llama), **kw)
    assert named.identity["label_tokens"] == f"tokenizer:{tiny_llama}"
    (out,) = named.run([SPLIT])
    assert abs(out.logprobs["Harmful"] - hf_split["Harmful"]) < 1e-4
    # another source of label tokens is another cache key: old scores are not reused
    assert request_key(named.identity, SPLIT) != request_key(OpenAIBackend("tiny", **kw).identity,
                                                             SPLIT)
    with pytest.raises(LocalevalError, match="--tokenizer .* cannot be loaded"):
        OpenAIBackend("tiny", tokenizer=str(tiny_llama / "nowhere"), **kw)


def test_candidates_sharing_a_first_token_fail_that_request_alone(server, key):
    b = OpenAIBackend("tiny", base_url=server.url, api_key_env="TEST_SERVER_KEY",
                      top_logprobs=ALL)
    finished = []
    clash, fine = b.run([ScoreNext("問題：", ("Harm", "Harmful")), SPLIT],
                        progress=lambda i, r: finished.append(i))
    assert "share a first token; ScoreNext reads one position" in clash.error
    assert error_of(fine) is None and sorted(finished) == [0, 1]


def test_the_tokenizer_option_is_the_server_backends_alone():
    check_options("openai:tiny", BackendConfig(tokenizer="HuggingFaceTB/SmolLM2-135M"))
    with pytest.raises(LocalevalError, match="--tokenizer: not an option of the hf backend"):
        check_options("hf:x", BackendConfig(tokenizer="HuggingFaceTB/SmolLM2-135M"))


def test_server_tokens_drop_the_bos_and_name_only_whole_characters():
    """llama-cpp-python's /extras/tokenize adds the BOS (id 1 here), which is not a candidate's
    first token; a first token that is a byte of a character has no name of its own; a call
    that fails fails that candidate's requests alone."""
    vocab = {1: "<s>", 7: "Harm", 8: "ful", 9: "\ufffd", 10: "Safe", 11: "Hi"}
    words = {"": [], "Hi": [11], "Harmful": [7, 8], "安全": [9, 9], "Safe": [10]}

    def post(calls):
        out = []
        for url, body in calls:
            if url == "http://server/extras/tokenize":
                text = body["input"]
                out.append("HTTP 500 from server: boom" if text == "Broken"
                           else {"tokens": [1, *words[text]]})
            elif url == "http://server/extras/detokenize":
                out.append({"text": vocab[body["tokens"][0]]})
            else:  # no vLLM routes here
                out.append("HTTP 404 from server: not found")
        return out

    tokens = ServerTokens.probe(post, "http://server", "m")
    assert tokens.api.tokenize == "/extras/tokenize"
    assert tokens.names(["Harmful", "Safe"]) == {"Harmful": "Harm", "Safe": "Safe"}
    assert tokens.lead == [1]
    with pytest.raises(LabelTokenError, match="part of a character"):
        tokens.names(["安全", "Safe"])
    with pytest.raises(LabelTokenError, match="failed for candidate 'Broken'.*boom"):
        tokens.names(["Broken", "Safe"])
    assert ServerTokens.probe(lambda calls: ["HTTP 404"] * len(calls), "http://x", "m") is None


@pytest.fixture
def trickling():
    """A server that sends its reply one byte at a time (:mod:`misbehaving_server`)."""
    with serve_misbehaving() as address:
        yield address


def test_timeout_is_a_deadline_for_the_whole_request(trickling):
    """The reply trickles in over ~10 s, each byte well within the timeout of 1 s."""
    from localeval.backends.openai_compat import OpenAIBackend

    Misbehaving.mode = "trickle"
    backend = OpenAIBackend("m", base_url=f"http://{trickling}/v1", timeout=1, max_retries=0)
    (response,) = backend.run([Generate("hi", max_tokens=4)])
    assert isinstance(response, Failed) and "timeout after 1 s" in response.error
