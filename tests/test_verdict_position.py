"""Issue 49 item 1: a guard's verdict is read at the first generated position whose top-k holds
a label, as the authors' code reads it (IRIS ``guard_models/base.py`` ``GuardLLM.complete``:
per generated position, ``output[:len(valid_tokens)]`` of its top log-probs, the labels among
them renormalised; ``predict`` keeps ``pred_labels[0]``, the first position holding one), greedy,
at most ``max_new_tokens=100`` positions (``llm_guard.py`` ``LLMGuard``, ``llama_guard.py``
``LlamaGuard``). Expected values worked by hand from that code."""

from __future__ import annotations

import json
import math

import pytest
from scripted_server import ScriptedServer
from tiny_models import save_tokenizer

from localeval.backends.base import Direct, ScoreNext, request_key
from localeval.guards import Conversation, get_guard

# The scenario: the first generated position's top 2 is "**" -0.1, "The" -2.5 (no
# label); the second's "Harm" -0.05, "Safe" -3.2. IRIS: pred_labels[0] is the second position,
# P(Harmful) = e^-0.05 / (e^-0.05 + e^-3.2) = 0.958872
SCENARIO = [[("**", -0.1), ("The", -2.5)], [("Harm", -0.05), ("Safe", -3.2)]]
IRIS_SCORE = math.exp(-0.05) / (math.exp(-0.05) + math.exp(-3.2))


def _chat_reply(positions: list[list[tuple[str, float]]], body: dict) -> bytes:
    """A chat reply holding at most ``max_tokens`` of ``positions``, each greedy (its first
    entry the token written), with their top log-probs as the server was asked for them."""
    kept = positions[:body.get("max_tokens") or len(positions)]
    content = [{"token": top[0][0], "logprob": top[0][1],
                "top_logprobs": [{"token": t, "logprob": v} for t, v in top]} for top in kept]
    return json.dumps({"choices": [{"index": 0, "message": {
        "role": "assistant", "content": "".join(top[0][0] for top in kept)},
        "logprobs": {"content": content}, "finish_reason": "length"}]}).encode()


def _zero_shot_on_server(positions, tmp_path, **options):
    from localeval.backends.openai_compat import OpenAIBackend

    tokenizer = tmp_path / "tok"
    if not tokenizer.exists():
        tokenizer.mkdir()
        save_tokenizer(tokenizer)  # SmolLM2's: "Harmful" is "Harm" + "ful", as IRIS keys it
    with ScriptedServer(lambda path, body: _chat_reply(positions, body)) as server:
        backend = OpenAIBackend("m", base_url=server.url, max_retries=0,
                                tokenizer=str(tokenizer))
        guard = get_guard("zero-shot", **options)
        (verdict,) = guard.classify([Conversation("p")], Direct(backend))
    return verdict, server.posts


def test_a_server_verdict_is_read_at_the_first_position_holding_a_label(tmp_path):
    verdict, posts = _zero_shot_on_server(SCENARIO, tmp_path)
    assert verdict.error is None
    assert verdict.score == pytest.approx(IRIS_SCORE, abs=1e-12)
    assert round(verdict.score, 4) == 0.9589
    (_, body), = posts
    assert body["max_tokens"] == 100  # IRIS LLMGuard: max_new_tokens=100
    assert body["logprobs"] is True and body["temperature"] == 0.0
