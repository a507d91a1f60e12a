"""Prefix reuse and batching must not change results (issue 4's equality requirements)."""

import pytest
from tiny_models import make_model

from localeval.backends.base import Generate, ScoreNext
from localeval.backends.hf import HFBackend
from localeval.backends.prefix import plan_prefix_groups

SHARED_HEAD = ("以下是关于农学的单项选择题，请直接给出正确答案的选项。\n\n"
               + "牛的发情周期平均为\nA. 16～17天\nB. 21天\nC. 28天\nD. 19～20天\n答案： B\n\n" * 3)


def requests():
    reqs = [ScoreNext(SHARED_HEAD + f"问题{i}：" + "肉牛屠宰后" * (i % 5 + 1) + "\n答案：",
                      (" A", " B", " C", " D")) for i in range(11)]
    # Common prefix ends mid-word: the shared token prefix stops before "internation…".
    reqs += [ScoreNext(SHARED_HEAD + w, (" A", " B"))
             for w in ("internationalization", "internationally", "internat")]
    reqs.append(ScoreNext("an unrelated short prompt", (" yes", " no")))
    return reqs


@pytest.fixture(scope="module", params=["llama", "gpt2", "qwen2"])
def model_dir(request, tmp_path_factory):
    return make_model(tmp_path_factory.mktemp(request.param), arch=request.param, layers=2)


def run(model_dir, **kw):
    backend = HFBackend(str(model_dir), dtype="float32", device="cpu", **kw)
    return backend, backend.run(requests())


@pytest.mark.slow
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_prefix_reuse_equals_full_forward(model_dir, padding_side):
    _, reference = run(model_dir, prefix_reuse=False, batch_size=1)
    for batch_size in (1, 8):
        backend, got = run(model_dir, prefix_reuse=True, batch_size=batch_size,
                           padding_side=padding_side)
        for a, b in zip(got, reference):
            assert a.error is None and list(a.logprobs) == list(b.logprobs)
            for c in a.logprobs:
                assert abs(a.logprobs[c] - b.logprobs[c]) < 1e-4
            assert max(a.logprobs, key=a.logprobs.get) == max(b.logprobs, key=b.logprobs.get)
        # the shared head was forwarded once, not per request
        assert backend.stats["forwarded_tokens"] < backend.stats["prompt_tokens"] / 3


@pytest.mark.slow
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_results_identical_across_batch_sizes(model_dir, padding_side):
    """Byte-identical, not just close: results must not depend on the batch size."""
    outs = [[r.logprobs for r in run(model_dir, batch_size=bs, padding_side=padding_side)[1]]
            for bs in (1, 3, 8)]
    assert outs[0] == outs[1] == outs[2]
    tight = run(model_dir, batch_size="auto", max_batch_tokens=300, padding_side=padding_side)[1]
    assert [r.logprobs for r in tight] == outs[0]


@pytest.mark.slow
def test_logprobs_match_a_plain_forward(tiny_llama):
    """Against the model called directly, full logits, no tricks."""
    import torch

    backend = HFBackend(str(tiny_llama), dtype="float32")
    req = requests()[0]
    got = backend.run([req])[0].logprobs
    ids = backend.tokenizer(req.prompt)["input_ids"]
    with torch.no_grad():
        logits = backend.model(torch.tensor([ids])).logits[0, -1].log_softmax(-1)
    for cand, value in got.items():
        token = backend.tokenizer(req.prompt + cand)["input_ids"][len(ids)]
        assert abs(value - logits[token].item()) < 1e-5


@pytest.mark.slow
def test_candidate_errors_are_reported_not_raised(tiny_llama):
    backend = HFBackend(str(tiny_llama))
    out = backend.run([ScoreNext("prompt", (" A", " A")), ScoreNext("prompt", (" A", " B"))])
    assert "share a first token" in out[0].error and out[1].error is None


@pytest.mark.slow
def test_generate_stops_and_chat_prefill(tiny_llama):
    backend = HFBackend(str(tiny_llama))
    msgs = [{"role": "user", "content": "你好"}, {"role": "assistant", "content": "正確答案：("}]
    text, special = backend.render(msgs)
    assert text == "<|im_start|>user\n你好<|im_end|>\n<|im_start|>assistant\n正確答案：("
    assert special is False
    out = backend.run([Generate("問題：一加一？\n", max_tokens=12, stop=("\n",))])[0]
    assert out.error is None and "\n" not in out.text


def test_prefix_planner():
    shared = list(range(100))
    seqs = [shared + [1000 + i] * (i + 1) for i in range(5)] + [[7, 7, 7]]
    groups = plan_prefix_groups(seqs, min_prefix=16)
    by_members = {tuple(sorted(g.members)): g.prefix_len for g in groups}
    assert by_members[(0, 1, 2, 3, 4)] == 100 and by_members[(5,)] == 0
    # identical prompts keep one token of their own
    assert plan_prefix_groups([shared, shared], min_prefix=16)[0].prefix_len == 99
    # two families with different long prefixes are split apart
    fam = [[1] * 50 + [2] * 60 + [i] for i in range(3)] + [[1] * 50 + [3] * 60 + [i] for i in range(3)]
    assert sorted(g.prefix_len for g in plan_prefix_groups(fam)) == [110, 110]


def test_planner_keeps_a_shared_preamble_whole_when_items_are_short():
    """ShieldGemma per policy: preamble, item, then one of four guidelines. Splitting per item
    would save 3 x 12 - 30 = 6 tokens an item and leave each item's four rows a batch of their
    own: one group. Long shared parts (few-shot blocks) still split."""
    preamble = list(range(30))
    guidelines = [[1000 + 100 * p + k for k in range(100)] for p in range(4)]
    seqs = [preamble + [500 + 20 * i + k for k in range(12)] + g
            for i in range(50) for g in guidelines]
    groups = plan_prefix_groups(seqs)
    assert [(g.prefix_len, len(g.members)) for g in groups] == [(30, 200)]
    long = [preamble + [500 + i] * 200 + g for i in range(2) for g in guidelines]
    assert sorted(g.prefix_len for g in plan_prefix_groups(long)) == [230, 230]


@pytest.mark.slow
def test_generation_from_prefix_cache_equals_plain_generation(model_dir):
    head = SHARED_HEAD * 2
    reqs = [Generate(head + f"问题{i}：" + "肉牛" * (i + 1) + "\n答案：", max_tokens=10, stop=("\n\n",))
            for i in range(4)]
    reused = HFBackend(str(model_dir), dtype="float32")
    plain = HFBackend(str(model_dir), dtype="float32", prefix_reuse=False)
    a, b = reused.run(reqs), plain.run(reqs)
    assert [r.text for r in a] == [r.text for r in b]
    assert all(r.error is None for r in a)
    assert reused.stats["forwarded_tokens"] < plain.stats["forwarded_tokens"] / 2


@pytest.mark.slow
def test_prompt_over_the_context_fails_alone(tiny_llama):
    backend = HFBackend(str(tiny_llama))
    backend.max_context = lambda: 40
    out = backend.run([ScoreNext(SHARED_HEAD, (" A", " B")), ScoreNext("短的问题", (" A", " B"))])
    assert "over the model's context of 40" in out[0].error
    assert out[1].error is None and set(out[1].logprobs) == {" A", " B"}
