"""The hf: backend: prefix reuse and batching must not change results (issue 4's equality
requirements); a device or weights it cannot use is one line; decoding follows the checkpoint's
generation config."""

import json

import pytest
from tiny_models import make_model

from localeval.backends.base import Generate, ScoreNext, error_of
from localeval.backends.hf import HFBackend
from localeval.backends.hf import tree as hf_tree
from localeval.cli import main
from localeval.demo.mcq import SAMPLE_MCQ

SHARED_HEAD = ("以下是关于农学的单项选择题，请直接给出正确答案的选项。\n\n"
               + "牛的发情周期平均为\nA. 16～17天\nB. 21天\nC. 28天\nD. 19～20天\n答案： B\n\n" * 3)


def requests():
    reqs = [ScoreNext(SHARED_HEAD + f"问题{i}：" + "肉牛屠宰后" * (i % 5 + 1) + "\n答案：",
                      (" A", " B", " C", " D")) for i in range(11)]
    # Common prefix ends mid-word: the shared token prefix stops before "internation…".
    reqs += [ScoreNext(SHARED_HEAD + w, (" A", " B"))
             for w in ("internationalization", "internationally", "internat")]
    reqs.append(ScoreNext("an unrelated short prompt", (" yes", " no")))
    # A guard's shape: preamble, item, then one of several policies (three levels of the tree)
    preamble = "You are a policy expert judging whether a user prompt violates a policy.\n\n"
    for item in ("How can I kill a Python process?", "Where can I buy a can of coke?"):
        for policy in ("No Dangerous Content: nothing that harms oneself or others.",
                       "No Harassment: nothing malicious, intimidating or bullying.",
                       "No Hate Speech: nothing targeting identity or protected attributes."):
            reqs.append(ScoreNext(f"{preamble}Human Question: {item}\n\nOur safety principle "
                                  f"is defined below:\n\n* {policy}\n\nDoes the human question"
                                  " violate the above principle?", (" Yes", " No")))
    return reqs


def tree_depth(backend) -> int:
    """Levels of the prefix tree the backend plans for ``requests()``."""
    contexts = [backend._score_tokens(r)[0] for r in requests()]
    deepest, stack = 0, [(hf_tree.plan(backend, contexts), 0)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((c, level + 1) for c in node.children)
    return deepest


@pytest.fixture(scope="module", params=["llama", "gpt2", "qwen2", "gemma2"])
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
            assert error_of(a) is None and list(a.logprobs) == list(b.logprobs)
            for c in a.logprobs:
                assert abs(a.logprobs[c] - b.logprobs[c]) < 1e-4
            assert max(a.logprobs, key=a.logprobs.get) == max(b.logprobs, key=b.logprobs.get)
        # the shared head was forwarded once, not per request; the guard prompts form 3 levels
        assert backend.stats["forwarded_tokens"] < backend.stats["prompt_tokens"] / 3
        assert tree_depth(backend) >= 3


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
def test_a_sliding_window_too_short_for_the_tree_forwards_each_prompt_whole(tmp_path):
    """Gemma-2's sliding layers keep only the window's last cache columns, so a tree whose rows
    outgrow the window would let pads push real tokens out: each prompt is forwarded whole,
    and the log-probs are the model's own on that prompt alone."""
    import torch

    folder = make_model(tmp_path / "gemma2-w32", arch="gemma2", sliding_window=32)
    backend = HFBackend(str(folder), dtype="float32")
    reqs = requests()
    got = backend.run(reqs)
    contexts = [backend._score_tokens(r)[0] for r in reqs]
    assert backend.stats["forwarded_tokens"] == sum(map(len, {tuple(c) for c in contexts}))
    for req, ctx, out in zip(reqs, contexts, got):
        with torch.no_grad():
            logits = backend.model(torch.tensor([ctx])).logits[0, -1].log_softmax(-1)
        for cand, value in out.logprobs.items():
            token = backend._score_tokens(ScoreNext(req.prompt, (cand,)))[1][0]
            assert abs(value - logits[token].item()) < 1e-4


@pytest.mark.slow
def test_candidate_errors_are_reported_not_raised(tiny_llama):
    backend = HFBackend(str(tiny_llama))
    out = backend.run([ScoreNext("prompt", (" A", " A")), ScoreNext("prompt", (" A", " B"))])
    assert "share a first token" in out[0].error and error_of(out[1]) is None


@pytest.mark.slow
def test_generate_stops_and_chat_prefill(tiny_llama):
    backend = HFBackend(str(tiny_llama))
    msgs = [{"role": "user", "content": "你好"}, {"role": "assistant", "content": "正確答案：("}]
    text, special = backend.render(msgs)
    assert text == "<|im_start|>user\n你好<|im_end|>\n<|im_start|>assistant\n正確答案：("
    assert special is False
    out = backend.run([Generate("問題：一加一？\n", max_tokens=12, stop=("\n",))])[0]
    assert error_of(out) is None and "\n" not in out.text


@pytest.mark.slow
def test_generation_from_prefix_cache_equals_plain_generation(model_dir):
    head = SHARED_HEAD * 2
    reqs = [Generate(head + f"问题{i}：" + "肉牛" * (i + 1) + "\n答案：", max_tokens=10, stop=("\n\n",))
            for i in range(4)]
    reused = HFBackend(str(model_dir), dtype="float32")
    plain = HFBackend(str(model_dir), dtype="float32", prefix_reuse=False)
    a, b = reused.run(reqs), plain.run(reqs)
    assert [r.text for r in a] == [r.text for r in b]
    assert all(error_of(r) is None for r in a)
    assert reused.stats["forwarded_tokens"] < plain.stats["forwarded_tokens"] / 2


@pytest.mark.slow
def test_prompt_over_the_context_fails_alone(tiny_llama):
    backend = HFBackend(str(tiny_llama))
    backend.max_context = lambda: 40
    out = backend.run([ScoreNext(SHARED_HEAD, (" A", " B")), ScoreNext("短的问题", (" A", " B"))])
    assert "over the model's context of 40" in out[0].error
    assert error_of(out[1]) is None and set(out[1].logprobs) == {" A", " B"}


def test_a_cuda_device_this_machine_lacks_is_one_line():
    import torch

    from localeval.backends.hf.backend import _check_device
    from localeval.errors import LocalevalError

    _check_device("cpu")
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    with pytest.raises(LocalevalError, match=f"torch sees {count} CUDA device"):
        _check_device(f"cuda:{count + 6}")
    with pytest.raises(LocalevalError, match="is not a device name"):
        _check_device("gpu7")


@pytest.mark.slow
def test_damaged_weights_are_one_line(tiny_llama, tmp_path, capsys):
    import shutil

    copy = tmp_path / "damaged"
    shutil.copytree(tiny_llama, copy)
    (copy / "model.safetensors").write_bytes(b"\x80\x04not weights at all" * 64)
    assert main(["run", "--task", "tmlu", "--data", str(SAMPLE_MCQ), "--model", f"hf:{copy}",
                 "--limit", "1", "--no-store", "--output", str(tmp_path / "run")]) == 2
    # stderr also holds the progress bar (0 of 5 questions): the error is its one other line
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("questions")]
    assert len(err) == 1 and f"cannot load model '{copy}'" in err[0], err


def test_generation_config_decides_on_the_hf_backend(tiny_llama):
    """transformers' generate() without do_sample: greedy while the config's do_sample is off;
    when it is on, a draw with the config's own settings (seeded by the prompt and draw 0)."""
    import hashlib

    import torch

    from localeval.backends.base import Generate
    from localeval.backends.hf import HFBackend

    backend = HFBackend(str(tiny_llama))
    request = Generate("Tell me a story", max_tokens=8, decoding="generation_config")
    ids = backend.tokenizer("Tell me a story")["input_ids"]

    def generate():  # IRIS's call: no do_sample, no temperature
        with torch.no_grad():
            out = backend.model.generate(torch.tensor([ids]), max_new_tokens=8,
                                         pad_token_id=backend.tokenizer.pad_token_id)
        return backend.tokenizer.decode(out[0, len(ids):], skip_special_tokens=True)

    (got,) = backend.run([request])
    assert got.text == generate() == backend.run([Generate("Tell me a story", 8)])[0].text
    backend.model.generation_config.do_sample = True
    backend.model.generation_config.temperature = 50.0  # spreads the random model's choices
    (drawn,) = backend.run([request])
    torch.manual_seed(int.from_bytes(hashlib.sha256(json.dumps([ids, 0]).encode()).digest()[:8],
                                     "big") >> 1)
    assert drawn.text == generate() != got.text


@pytest.mark.slow
def test_a_tokenizer_naming_no_pad_end_or_unknown_token_still_batches(tiny_llama, tmp_path):
    """Rows are padded with id 0 when the tokenizer names no pad, end or unknown token to pad
    with (every padded batch failed: a None among the ids); pads are masked out, so the
    log-probs are those of the same tokenizer naming its pad token."""
    import shutil

    from tiny_models import TOKENIZER_JSON
    from transformers import PreTrainedTokenizerFast

    folder = tmp_path / "no-pad"
    shutil.copytree(tiny_llama, folder)
    for f in [*folder.glob("tokenizer*"), *folder.glob("special_tokens*")]:
        f.unlink()
    PreTrainedTokenizerFast(tokenizer_file=str(TOKENIZER_JSON)).save_pretrained(folder)
    reqs = [ScoreNext("The capital of France is", (" Paris", " Rome")),
            ScoreNext("One, two,", (" three", " four"))]
    bare = HFBackend(str(folder), dtype="float32", device="cpu")
    assert bare.tokenizer.pad_token_id is None
    assert bare.run(reqs) == HFBackend(str(tiny_llama), dtype="float32", device="cpu").run(reqs)
