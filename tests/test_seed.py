"""``--seed`` (issue 69): the seed of a run's sampled draws (multiple choice's --repeats,
llm-safety's responses), a protocol option. Unset, every draw is keyed, seeded and cached as
before the flag; set, each draw is seeded by it too (hf:, vllm:) or sent with a seed of its own
(a server)."""

from __future__ import annotations

import json

from test_run_spec import SaysB

from localeval import evaluate
from localeval.backends.base import Generate, draw_key, request_fields, server_seed
from localeval.demo.mcq import SAMPLE_MCQ


def test_an_unseeded_draw_is_keyed_and_seeded_as_before():
    draw = Generate("問題：", sample=1)
    assert "seed" not in request_fields(draw)  # the cache key of every run before --seed
    assert draw_key([1, 2], draw) == json.dumps([[1, 2], 1]).encode()
    assert server_seed(draw) is None


def test_a_seeded_draw_differs_by_seed_and_by_draw():
    seeded = [Generate("問題：", sample=k, seed=s) for s in (7, 8) for k in (0, 1)]
    assert len({draw_key([1, 2], d) for d in seeded}) == 4
    assert len({server_seed(d) for d in seeded}) == 4
    assert request_fields(seeded[0])["seed"] == 7


class Asked(SaysB):
    def __init__(self):
        super().__init__()
        self.asked: list = []

    def run(self, requests, progress=None):
        self.asked += requests
        return super().run(requests, progress)


def test_the_run_sends_its_seed_with_each_draw(tmp_path):
    backend = Asked()
    run = evaluate(task="tmlu", model=backend, data=SAMPLE_MCQ, method="generation",
                   repeats=2, seed=7, limit=1, output=tmp_path / "run", quiet=True, store=False)
    drawn = [r for r in backend.asked if r.sample is not None]
    assert drawn and {r.seed for r in drawn} == {7} and {r.sample for r in drawn} == {0, 1}
    assert run.config["seed"] == 7
