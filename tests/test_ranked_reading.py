"""Issue 63 item 1: under ``label_scores=full`` the labelled position a first request found by
its top k is read again with every log-prob asked (:mod:`localeval.backends.ranked_reading`).
That second read stands for the first only where it is the same reading: the same greedy tokens
up to the position, and the first label found there at the value the first read gave it (within
the README's 1e-3). A server that is not batch-invariant may write other tokens the second time
and land a label at the same position with other values; that is a failed sample with its
reason, never a score."""

from __future__ import annotations

import json
import math

import pytest
from scripted_server import ScriptedServer
from tiny_models import save_tokenizer

from localeval.backends.base import Direct, ScoreNext
from localeval.guards import Conversation, get_guard


def _chat_reply(positions: list[list[tuple[str, float]]], body: dict) -> bytes:
    """A chat reply of at most ``max_tokens`` of ``positions``, each greedy (its first entry
    the token written), with as many top log-probs as were asked."""
    kept = positions[:body.get("max_tokens") or len(positions)]
    asked = body.get("top_logprobs") or 0
    content = [{"token": top[0][0], "logprob": top[0][1],
                "top_logprobs": [{"token": t, "logprob": v} for t, v in top[:asked]]}
               for top in kept]
    return json.dumps({"choices": [{"index": 0, "message": {
        "role": "assistant", "content": "".join(top[0][0] for top in kept)},
        "logprobs": {"content": content}, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": len(kept)}}).encode()


def _full_verdict(tmp_path, first, second):
    """The zero-shot guard's ``label_scores=full`` verdict from a server whose first reply
    writes ``first`` and whose second writes ``second``; and the bodies posted."""
    from localeval.backends.openai_compat import OpenAIBackend

    tokenizer = tmp_path / "tok"
    tokenizer.mkdir()
    save_tokenizer(tokenizer)  # SmolLM2's: "Harmful" is "Harm" + "ful"
    replies = [first, second]

    def reply(path, body):
        return _chat_reply(replies[min(len(server.posts), 2) - 1], body)
    with ScriptedServer(reply) as server:
        backend = OpenAIBackend("m", base_url=server.url, max_retries=0,
                                tokenizer=str(tokenizer))
        guard = get_guard("zero-shot", label_scores="full")
        (verdict,) = guard.classify([Conversation("p")], Direct(backend))
    return verdict, [b for _, b in server.posts]


# the first read: "The", then "Harm" at position 1 (-0.3), "Safe" 3rd there (not
# among the top 2 the guard reads, so that position is read again)
FIRST = [[("The", -0.1), ("**", -2.5), ("Sure", -3.0)],
         [("Harm", -0.3), ("x", -1.5), ("Safe", -2.0)]]


def test_a_second_read_with_other_greedy_tokens_before_the_position_fails(tmp_path):
    """The issue's scenario: the second read writes "Sure" where the first wrote "The", then
    both labels at position 1 with other values. The position alone matches; the run took the
    second read's values and scored the sample."""
    second = [[("Sure", -0.2), ("The", -0.4)], [("Safe", -0.5), ("Harm", -1.1)]]
    verdict, posts = _full_verdict(tmp_path, FIRST, second)
    assert [(b["max_tokens"], b["top_logprobs"]) for b in posts] == [(100, 2), (2, 20)]
    assert verdict.score is None
    assert "greedy tokens changed between two requests" in verdict.error
    assert "generated token 0 was 'The', then 'Sure'" in verdict.error


def test_a_second_read_with_another_value_for_the_first_label_fails(tmp_path):
    """The same greedy tokens, the label at the same position, but "Harm" there at -1.1 where
    the first read gave it -0.3: not the distribution the first read found."""
    second = [FIRST[0], [("Safe", -0.5), ("Harm", -1.1)]]
    verdict, _ = _full_verdict(tmp_path, FIRST, second)
    assert verdict.score is None
    assert "'Harmful' at generated position 1 was -0.3000, then -1.1000" in verdict.error


def test_a_second_read_within_the_tolerance_is_scored(tmp_path):
    """The same tokens and the first label's value within 1e-3 (float order between two
    computations of one distribution): scored with the second read's values."""
    second = [FIRST[0], [("Harm", -0.3004), ("x", -1.5), ("Safe", -2.0)]]
    verdict, _ = _full_verdict(tmp_path, FIRST, second)
    assert verdict.error is None
    assert verdict.score == pytest.approx(
        math.exp(-0.3004) / (math.exp(-0.3004) + math.exp(-2.0)), abs=1e-12)


def test_vllm_engine_second_pass_is_checked_the_same_way(monkeypatch):
    """``vllm:`` makes its second read by token id (``logprob_token_ids``); the same check:
    its greedy tokens up to the position were already compared, and now the first label's
    value too."""
    from types import SimpleNamespace

    from localeval.backends import vllm_engine
    from localeval.backends.vllm_engine import VllmBackend

    def step(**values):
        return {int(t[1:]): SimpleNamespace(logprob=v) for t, v in values.items()}

    first = SimpleNamespace(outputs=[SimpleNamespace(
        token_ids=[7, 1], text="", logprobs=[step(t7=-0.1, t8=-2.5), step(t1=-0.3, t9=-1.5)])])
    second = SimpleNamespace(outputs=[SimpleNamespace(
        token_ids=[7, 2], text="", logprobs=[step(t7=-0.1), step(t1=-1.1, t2=-0.5)])])
    passes = iter([[first], [second]])
    engine = object.__new__(VllmBackend)
    engine.stats = {"requests": 0, "prompt_tokens": 0, "generated_tokens": 0}
    monkeypatch.setattr(engine, "_plan", lambda request: ([5, 6], "first pass", [1, 2]),
                        raising=False)
    monkeypatch.setattr(engine, "_generate", lambda block: next(passes), raising=False)
    monkeypatch.setattr(vllm_engine, "_whole_params", lambda p, targets: "again")
    request = ScoreNext("p", ("Harmful", "Safe"), top=2, positions=100, whole_vocabulary=True)
    (got,) = engine.run([request])
    assert "'Harmful' at generated position 1 was -0.3000, then -1.1000" in got.error
