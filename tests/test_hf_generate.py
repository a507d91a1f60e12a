"""Batched greedy decoding (backends/hf/generate.py) must not change what is generated: the same
text and token ids at any batch size, with left or right padding, and the same as a plain
one-prompt-at-a-time ``model.generate``."""

import json

import pytest
from tiny_models import SHARED, make_model

from localeval.backends.base import Generate, error_of
from localeval.backends.hf import HFBackend
from localeval.backends.hf import generate as hf_generate
from localeval.data.items import MCQItem
from localeval.tasks.prompts import PromptConfig, build_prompt

pytestmark = pytest.mark.slow


def _items() -> list[MCQItem]:
    rows = (SHARED / "data" / "tmmluplus-sample" / "test.jsonl").read_text().splitlines()
    out = []
    for n, line in enumerate(rows):
        r = json.loads(line)
        out.append(MCQItem(id=str(n), subject="economics", question=r["question"],
                           options=(r["A"], r["B"], r["C"], r["D"]), answer=r["answer"],
                           explanation=f"逐一比較各選項，({r['answer']}) 最符合題意。"))
    return out


def requests() -> list[Generate]:
    """TMLU-format direct and CoT prompts (5-shot: a long shared prefix), prompts whose shared
    token prefix ends mid-word, and generation budgets that end rows at different steps."""
    items = _items()
    shots, tests = items[:5], items[5:17]
    reqs = []
    for k, item in enumerate(tests):
        direct = build_prompt(item, shots, "經濟學", PromptConfig(style="tmlu", shots=5))
        cot = build_prompt(item, shots, "經濟學", PromptConfig(style="tmlu", shots=5, cot=True))
        reqs.append(Generate(direct, max_tokens=3 + k % 4, stop=("\n\n", "問題：")))
        reqs.append(Generate(cot, max_tokens=10 + 3 * k, stop=("問題：",)))
    head = build_prompt(items[0], shots, "經濟學", PromptConfig(style="tmlu", shots=5))
    # stop strings random text does contain, so rows end at different steps mid-batch
    reqs += [Generate(head + w, max_tokens=9 + k, stop=("e", "o\n"))
             for k, w in enumerate(("internationalization", "internationally", "internat"))]
    reqs += [Generate(direct, max_tokens=20, stop=("a",)) for direct in
             (build_prompt(item, shots, "經濟學", PromptConfig(style="tmlu", shots=5))
              for item in items[8:20])]
    reqs.append(Generate("an unrelated short prompt", max_tokens=7))
    return reqs


@pytest.fixture(scope="module", params=["llama", "gpt2", "gemma2"])
def model_dir(request, tmp_path_factory):
    """Untied models: they write varied text, so a wrong attention span or row would show."""
    return make_model(tmp_path_factory.mktemp(request.param), arch=request.param, layers=2,
                      tied=False)


@pytest.fixture(scope="module")
def untied_llama(tmp_path_factory):
    return make_model(tmp_path_factory.mktemp("llama"), arch="llama", layers=2, tied=False)


def generate(model_dir, reqs, **kw):
    """(texts, token ids per request, backend), the ids read from the decoder's rows."""
    backend = HFBackend(str(model_dir), dtype="float32", device="cpu", **kw)
    ids: dict[str, list[int]] = {}
    original = hf_generate._response

    def record(backend, row):
        ids[json.dumps([row.request.prompt, row.request.max_tokens], ensure_ascii=False)] = \
            list(row.new)
        return original(backend, row)

    hf_generate._response = record
    try:
        out = backend.run(reqs)
    finally:
        hf_generate._response = original
    assert all(error_of(r) is None for r in out)
    keys = [json.dumps([r.prompt, r.max_tokens], ensure_ascii=False) for r in reqs]
    return [r.text for r in out], [ids[k] for k in keys], backend


@pytest.fixture(scope="module")
def batch16_right():
    """The requests' (texts, ids, backend) at batch size 16, right padding (the default), per
    model folder: both tests below need that run of the same requests on the same model, one
    computes it, the other reads it (a run is deterministic: the same texts and ids again)."""
    done: dict[str, tuple] = {}

    def run(model_dir):
        if str(model_dir) not in done:
            done[str(model_dir)] = generate(model_dir, requests(), batch_size=16,
                                            padding_side="right")
        return done[str(model_dir)]
    return run


@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_same_text_and_tokens_at_any_batch_size(model_dir, padding_side, batch16_right):
    reqs = requests()
    texts, ids, backend = generate(model_dir, reqs, batch_size=1, padding_side=padding_side)
    assert backend.stats["decode_steps"] > 0
    for kw in ({"batch_size": 3}, {"batch_size": 16}, {"max_batch_tokens": 2000}):
        if kw == {"batch_size": 16} and padding_side == "right":
            got_texts, got_ids, other = batch16_right(model_dir)
        else:
            got_texts, got_ids, other = generate(model_dir, reqs, padding_side=padding_side,
                                                 **kw)
        assert got_texts == texts and got_ids == ids, kw
        if kw.get("batch_size") == 16:  # rows of a width decode together, not one by one
            assert other.stats["decode_steps"] < backend.stats["decode_steps"]
    # the texts are not trivially empty, and some stop before their budget
    assert sum(bool(t) for t in texts) > len(texts) // 2
    assert any(len(i) < r.max_tokens for i, r in zip(ids, reqs))


def plain_generate(model_dir, reqs, eos=None, **config):
    """Each prompt alone through ``model.generate``, no prefix cache, no padding."""
    import torch
    from transformers import StopStringCriteria

    backend = HFBackend(str(model_dir), dtype="float32", device="cpu")
    model, tok = backend.model, backend.tokenizer
    texts, ids = [], []
    for r in reqs:
        prompt = tok(r.prompt)["input_ids"]
        stops = [StopStringCriteria(tok, list(r.stop))] if r.stop else []
        with torch.no_grad():
            out = model.generate(torch.tensor([prompt]), max_new_tokens=r.max_tokens,
                                 do_sample=False, stopping_criteria=stops,
                                 pad_token_id=tok.pad_token_id,
                                 **({"eos_token_id": eos} if eos else {}), **config)
        new = out[0, len(prompt):].tolist()
        text = tok.decode(new, skip_special_tokens=True)
        for s in r.stop:
            text = text.split(s)[0]
        texts.append(text)
        ids.append(new)
    return texts, ids


def test_same_as_plain_model_generate(model_dir, batch16_right):
    assert batch16_right(model_dir)[:2] == plain_generate(model_dir, requests())


def test_a_row_ending_at_eos_leaves_the_others_unchanged(untied_llama):
    """Make a token the first row generates mid-way an EOS token: that row ends there (EOS
    kept in its ids, not in its text) and every other row's output is as plain generate's."""
    reqs = requests()[:16]
    first_ids = plain_generate(untied_llama, reqs[1:2])[1][0]
    eos = [2, first_ids[len(first_ids) // 2]]
    want_texts, want_ids = plain_generate(untied_llama, reqs, eos=eos)
    backend = HFBackend(str(untied_llama), dtype="float32", device="cpu", batch_size=16)
    backend.model.generation_config.eos_token_id = eos
    got = [r.text for r in backend.run(reqs)]
    assert got == want_texts
    assert want_ids[1] == first_ids[: first_ids.index(eos[1]) + 1]


def test_generation_config_penalties_decode_one_prompt_at_a_time(untied_llama):
    reqs = requests()[:6]
    backend = HFBackend(str(untied_llama), dtype="float32", device="cpu", batch_size=16)
    backend.model.generation_config.repetition_penalty = 1.3
    assert "repetition_penalty" in hf_generate.one_at_a_time_reason(backend)
    got = [r.text for r in backend.run(reqs)]
    assert backend.stats["decode_steps"] == 0
    assert got == plain_generate(untied_llama, reqs, repetition_penalty=1.3)[0]


def test_a_sliding_window_shorter_than_the_rows_decodes_one_prompt_at_a_time(tmp_path):
    """Gemma-2 with a 32-token window: pads in a batch would take real tokens' place in the
    window, so each prompt goes through ``model.generate``, from a copy of the shared prefix's
    cache (no pads in it), and the texts are plain ``generate``'s."""
    folder = make_model(tmp_path / "gemma2-w32", arch="gemma2", tied=False, sliding_window=32)
    reqs = requests()[:8]
    backend = HFBackend(str(folder), dtype="float32", device="cpu", batch_size=16)
    got = [r.text for r in backend.run(reqs)]
    assert backend.stats["decode_steps"] == 0
    assert backend.stats["forwarded_tokens"] < backend.stats["prompt_tokens"] / 2
    assert got == plain_generate(folder, reqs)[0]


@pytest.mark.slow
def test_a_generated_row_is_reported_as_soon_as_it_ends(tmp_path):
    """Issue 24 item 4: in one decode batch (budgets of 17 and 40 tokens pad to the same row
    width), the 17-token row is handed to the run, and so to the cache, once it ends, not
    when the 40-token row does."""
    from tiny_models import make_model

    from localeval.backends.hf import HFBackend

    backend = HFBackend(str(make_model(tmp_path / "m", layers=2, tied=False)), device="cpu")
    reported = []
    requests = [Generate("問題：一加一是多少？", max_tokens=40),
                Generate("問題：二加二是多少？", max_tokens=17)]
    backend.run(requests, progress=lambda i, r: reported.append((i, backend.stats[
        "decode_steps"])))
    assert [i for i, _ in reported] == [1, 0]  # the short row first, while the long one decodes
    (_, short_steps), (_, long_steps) = reported
    assert short_steps <= 17 < long_steps
