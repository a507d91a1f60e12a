"""``reading=parallax`` on Llama Guard 3, Llama Guard 4 and ShieldGemma (issue 72): the verdict
read as panuthept/Parallax-AI ``c853033`` reads it, IRIS's reading staying the default.

Upstream (``parallax_ai/modules/safeguard_modules/``): ``base_module.py:59-77`` asks for up to
100 new tokens with their top 20 (l.72, 74); ``safeguard_completions`` (l.10-25) keeps the
labels among the top 20 of new token ``representative_token_index``, renormalised over those
found, and adds the harmful one's probability. The index: 1 in ``llamaguard_module.py:11``
(``LlamaGuardModule``) and l.23 (``LlamaGuard4Module``), 0 in ``shieldgemma_module.py:10``.
IRIS (``8cfede9`` ``guard_models/base.py`` ``GuardLLM.complete``, ``--top_logprobs 2``) reads
the first new token whose top 2 holds a label. Each expected score below is worked out by hand
from those lines on a scripted answer (each position's top 20, the first entry written)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from scripted_server import ScriptedServer
from test_verdict_position import _chat_reply

from localeval.backends.base import Direct, ScoreNext, request_key
from localeval.errors import LocalevalError
from localeval.guards import Conversation, get_guard


def fill(top: list[tuple[str, float]], start: float) -> list[tuple[str, float]]:
    """``top`` completed to 20 entries by fillers below ``start`` (keeping each place)."""
    return top + [(f"f{i}", start - i / 10) for i in range(20 - len(top))]


def fillers(values: list[float], name: str = "x") -> list[tuple[str, float]]:
    return [(f"{name}{i}", v) for i, v in enumerate(values)]


# Llama Guard 3 on its own template: the model's "\n\n" first (an "unsafe" 15th of its 20),
# then its verdict [safe -0.2 1st, unsafe -2.6 12th], then the end of its turn.
LG3_ANSWER = [
    [("\n\n", -0.05), *fillers([-3.0 - i / 100 for i in range(13)]), ("unsafe", -3.2),
     *fillers([-3.3 - i / 100 for i in range(5)], "y")],
    [("safe", -0.2), *fillers([-1.9 - i / 20 for i in range(10)]), ("unsafe", -2.6),
     *fillers([-2.7 - i / 10 for i in range(8)], "y")],
    fill([("<|eot_id|>", -0.01)], -6.0),
]
# parallax, new token 1: e^-2.6 / (e^-0.2 + e^-2.6) = 1 / (1 + e^2.4)
LG3_PARALLAX = 0.083173
# Llama Guard 4 on our text, which ends "...assistant<|header_end|>\n\n" (S8): the verdict is
# new token 0 [unsafe -0.4, safe -1.2]; new token 1 is "\n" with safe 10th, unsafe 18th.
LG4_ANSWER = [
    fill([("unsafe", -0.4), ("safe", -1.2)], -3.0),
    [("\n", -0.1), *fillers([-1.0 - i / 10 for i in range(8)]), ("safe", -4.0),
     *fillers([-4.1 - i / 10 for i in range(7)], "y"), ("unsafe", -5.5), ("z", -5.6),
     ("w", -5.7)],
    fill([("S", -0.1)], -7.0),
]
# IRIS: new token 0's top 2, 1 / (1 + e^-0.8); parallax: new token 1, 1 / (1 + e^1.5)
LG4_IRIS, LG4_PARALLAX = 0.689974, 0.182426
# ShieldGemma's first new token: No -0.15 1st, Yes -3.0 9th
SG_ANSWER = [
    [("No", -0.15), *fillers([-1.0 - i / 10 for i in range(7)]), ("Yes", -3.0),
     *fillers([-3.1 - i / 10 for i in range(11)], "y")],
    fill([(",", -0.2)], -5.0),
]
# IRIS asks one token's top 2 (No alone: 0.0); parallax: e^-3 / (e^-0.15 + e^-3)
SG_PARALLAX = 0.054681


def test_the_answers_are_what_the_hand_computation_says():
    for answer in (LG3_ANSWER, LG4_ANSWER, SG_ANSWER):
        for top in answer:
            assert len(top) == 20 and [v for _, v in top] == sorted((v for _, v in top),
                                                                    reverse=True)
    assert [t for t, _ in LG3_ANSWER[1]].index("unsafe") == 11
    assert [t for t, _ in LG4_ANSWER[1]].index("unsafe") == 17
    assert [t for t, _ in SG_ANSWER[0]].index("Yes") == 8
    assert 1 / (1 + math.exp(2.4)) == pytest.approx(LG3_PARALLAX, abs=1e-6)
    assert 1 / (1 + math.exp(-0.8)) == pytest.approx(LG4_IRIS, abs=1e-6)
    assert 1 / (1 + math.exp(1.5)) == pytest.approx(LG4_PARALLAX, abs=1e-6)
    assert 1 / (1 + math.exp(2.85)) == pytest.approx(SG_PARALLAX, abs=1e-6)


def _completions_reply(positions: list[list[tuple[str, float]]], body: dict) -> bytes:
    """A completions reply holding at most ``max_tokens`` of ``positions``, each greedy, with
    the top ``logprobs`` of each as the server was asked for them."""
    kept = positions[:body.get("max_tokens") or len(positions)]
    asked = body.get("logprobs") or 0
    return json.dumps({"choices": [{"index": 0, "text": "".join(t[0][0] for t in kept),
                                    "logprobs": {"tokens": [t[0][0] for t in kept],
                                                 "token_logprobs": [t[0][1] for t in kept],
                                                 "top_logprobs": [dict(t[:asked]) for t in kept]},
                                    "finish_reason": "length"}],
                       "usage": {"prompt_tokens": 10, "completion_tokens": len(kept)}}).encode()


def _on_server(answer, runs: list[tuple[str, Conversation, dict]]):
    """Each run's guard (name, conversation, options) on one vLLM-like server replying
    ``answer`` (chat or completions, as the request is): its verdict and the body it posted.
    Candidates are looked up by their whole text."""
    from localeval.backends.openai_compat import OpenAIBackend

    def reply(path: str, body: dict) -> bytes:
        return (_chat_reply if "messages" in body else _completions_reply)(answer, body)
    out = []
    with ScriptedServer(reply) as server:
        backend = OpenAIBackend("m", base_url=server.url, max_retries=0, top_logprobs=20,
                                chat_extensions="vllm")
        for guard, conversation, options in runs:
            (verdict,) = get_guard(guard, **options).classify([conversation], Direct(backend))
            out.append((verdict, server.posts[-1][1]))
    return out


def test_llamaguard3_parallax_reads_new_token_1_among_the_top_20():
    """IRIS's reading: new token 0's top 2 hold no label, new token 1's top 2 safe alone: 0.0.
    Parallax-AI's: new token 1 among its 20, 0.083173; with IRIS's top 20 instead it would be
    new token 0 (its 15th, unsafe alone: 1.0), which index 1 passes by."""
    runs = [("llamaguard3", c, options) for c in (Conversation("p"), Conversation("p", "r"))
            for options in ({}, {"reading": "parallax"})]
    got = _on_server(LG3_ANSWER, [*runs, ("llamaguard3", Conversation("p"),
                                          {"label_scores": "top-20"})])
    for (_, conversation, options), (verdict, body) in zip(runs, got[:-1], strict=True):
        if not options:
            assert verdict.score == 0.0 and body["top_logprobs"] == 2
            continue
        assert verdict.score == pytest.approx(LG3_PARALLAX, abs=1e-6)
        # the same messages on the chat endpoint, IRIS's (llamaguard_module.py:8-17 keeps
        # base_module.py:51-57): the checkpoint's own template; 100 new tokens, top 20
        assert [m["role"] for m in body["messages"]] == (
            ["user"] if conversation.response is None else ["user", "assistant"])
        assert body["add_generation_prompt"] is False
        assert body["max_tokens"] == 100 and body["top_logprobs"] == 20
    assert got[-1][0].score == 1.0


def test_llamaguard4_parallax_reads_the_token_after_our_texts_verdict():
    """Llama Guard 4's text ends after the assistant header's "\\n\\n" (S8), so its verdict is
    new token 0 (IRIS: 0.689974); LlamaGuard4Module reads index 1 (l.23), the token after it:
    safe 10th, unsafe 18th of its 20, 0.182426."""
    (iris, body), (parallax, posted) = _on_server(LG4_ANSWER, [
        ("llamaguard4", Conversation("p", "r"), {}),
        ("llamaguard4", Conversation("p", "r"), {"reading": "parallax"})])
    assert iris.score == pytest.approx(LG4_IRIS, abs=1e-6)
    assert body["max_tokens"] == 10 and body["logprobs"] == 2
    body = posted
    assert parallax.score == pytest.approx(LG4_PARALLAX, abs=1e-6)
    assert body["max_tokens"] == 100 and body["logprobs"] == 20
    assert body["prompt"] == get_guard("llamaguard4").requests(Conversation("p", "r"))[0].prompt


def test_shieldgemma_parallax_reads_new_token_0_among_the_top_20():
    """IRIS asks one token's top 2 (No alone: 0.0); ShieldGemmaModule new token 0 (l.10) among
    20 of up to 100: e^-3 / (e^-0.15 + e^-3) = 0.054681. The same text: the four policies IRIS
    and Parallax-AI send as the system message (IRIS shield_gemma.py:11-16,
    shieldgemma_module.py:17-22, the same characters)."""
    (iris, body), (parallax, posted), (prompt, _) = _on_server(SG_ANSWER, [
        ("shieldgemma", Conversation("p", "r"), {}),
        ("shieldgemma", Conversation("p", "r"), {"reading": "parallax"}),
        ("shieldgemma", Conversation("p"), {"reading": "parallax"})])
    assert iris.score == 0.0 and body["max_tokens"] == 1  # its top 2 kept (S4)
    assert parallax.score == pytest.approx(SG_PARALLAX, abs=1e-6)
    assert posted["max_tokens"] == 100 and posted["logprobs"] == 20
    assert posted["prompt"] == body["prompt"]
    assert prompt.score == pytest.approx(SG_PARALLAX, abs=1e-6)


# SEALGuard's first new token: safe -0.3 1st, unsafe -2.0 6th
SEAL_ANSWER = [[("safe", -0.3), *fillers([-1.0 - i / 10 for i in range(4)]), ("unsafe", -2.0),
                *fillers([-2.1 - i / 10 for i in range(14)], "y")]]
# e^-2 / (e^-0.3 + e^-2) = 1 / (1 + e^1.7)
SEAL = 0.154465


def test_sealguard_is_read_as_parallax_sealguard_module():
    """``sealguard_module.py:8-66`` (c853033): Llama Guard 3 8B's chat template text (l.20,
    26-46; our template=hf text, which ends at the assistant header, without our "\\n\\n"
    prefill) on the completions endpoint with its special tokens (l.47, 53-65), at most 10 new
    tokens with their top 20 (l.62-63), the labels at the first (l.11): 1 / (1 + e^1.7)."""
    assert 1 / (1 + math.exp(1.7)) == pytest.approx(SEAL, abs=1e-6)
    assert [t for t, _ in SEAL_ANSWER[0]].index("unsafe") == 5 and len(SEAL_ANSWER[0]) == 20
    got = _on_server(SEAL_ANSWER, [("sealguard", c, {})
                                   for c in (Conversation("p"), Conversation("p", "r"))])
    for (verdict, body), conversation in zip(got, (Conversation("p"), Conversation("p", "r")),
                                             strict=True):
        assert verdict.score == pytest.approx(SEAL, abs=1e-6)
        assert body["max_tokens"] == 10 and body["logprobs"] == 20
        (hf,) = get_guard("llamaguard3", template="hf").requests(conversation)
        assert hf.prompt.endswith("assistant<|end_header_id|>\n\n")
        assert body["prompt"] == hf.prompt.removesuffix("\n\n")
        assert body["prompt"].startswith(" <|begin_of_text|><|start_header_id|>user")
    (request,) = get_guard("sealguard").requests(Conversation("p"))
    assert request.add_special_tokens is True  # what the completions endpoint adds
    for options, message in [({"label_scores": "full"}, "label_scores=full"),
                             ({"verdict_position": "fixed"}, "not an option"),
                             ({"template": "own"}, "no option")]:
        with pytest.raises(LocalevalError, match=message):
            get_guard("sealguard", **options)


def test_too_few_new_tokens_is_a_failed_sample_not_a_score():
    """An answer that ends at new token 0: Parallax-AI's logprobs[1] raises; ours fails."""
    ((verdict, _),) = _on_server(LG3_ANSWER[:1],
                                 [("llamaguard3", Conversation("p"), {"reading": "parallax"})])
    assert verdict.score is None and verdict.error


def test_the_defaults_ask_what_they_asked_before():
    """IRIS's reading stays the default: the same requests (cache keys) as before the option."""
    chat = [{"role": "user", "content": "p"}, {"role": "assistant", "content": "r"},
            {"role": "after-template", "content": ""}]
    for guard, before in [
        ("llamaguard3", ScoreNext(chat, ("unsafe", "safe"))),
        ("llamaguard4", ScoreNext(get_guard("llamaguard4").render("p", "r"), ("unsafe", "safe"))),
    ]:
        for made in (get_guard(guard), get_guard(guard, reading="iris")):
            (request,) = made.requests(Conversation("p", "r"))
            assert request_key({}, request) == request_key({}, before)
        assert get_guard(guard).options.given == {}
    (request,) = get_guard("shieldgemma").requests(Conversation("p", "r"))
    assert request.at is None and request.positions is None


def test_what_parallax_cannot_be_combined_with_is_one_line():
    for guard, options, message in [
        ("llamaguard3", {"template": "hf"}, "template=own"),
        ("llamaguard3", {"label_scores": "full"}, "label_scores=full"),
        ("llamaguard3", {"verdict_position": "fixed"}, "reading=iris"),
        ("llamaguard4", {"label_scores": "full"}, "label_scores=full"),
        ("shieldgemma", {"mode": "per-policy"}, "mode=combined"),
        ("shieldgemma", {"label_scores": "full"}, "label_scores=full"),
    ]:
        with pytest.raises(LocalevalError, match=message):
            get_guard(guard, reading="parallax", **options)
    with pytest.raises(LocalevalError, match="iris, parallax"):
        get_guard("llamaguard3", reading="paralax")
    made = get_guard("llamaguard4", reading="parallax", label_scores="top-5")
    request = made._ranked(made.requests(Conversation("p"))[0])
    assert (request.top, request.at, request.positions) == (5, 1, 100)
    assert made.options.given == {"reading": "parallax", "label_scores": "top-5"}
    assert made.verdict_position_used is None


@pytest.mark.slow
def test_hf_reads_new_token_1_as_transformers_generates_it(tiny_llama):
    """``hf:`` against transformers' greedy ``generate``: Llama Guard 3's parallax reading of a
    prompt on the tiny model (its ChatML template as the checkpoint's own) is the labels'
    log-probs at the second generated position. Every label is kept (``top-N`` with N the
    vocabulary) so the score is defined on a random model."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from localeval.backends.hf.backend import HFBackend

    tok = AutoTokenizer.from_pretrained(tiny_llama)
    model = AutoModelForCausalLM.from_pretrained(tiny_llama, dtype=torch.float32).eval()
    guard = get_guard("llamaguard3", reading="parallax", label_scores=f"top-{len(tok)}")
    backend = HFBackend(str(tiny_llama), dtype="float32", device="cpu")
    (verdict,) = guard.classify([Conversation("Is this safe?")], Direct(backend))
    text, _ = backend.render([{"role": "user", "content": "Is this safe?"},
                              {"role": "after-template", "content": ""}])
    ids = tok(text, return_tensors="pt", add_special_tokens=False)["input_ids"]
    out = model.generate(ids, max_new_tokens=2, do_sample=False, output_scores=True,
                         return_dict_in_generate=True, pad_token_id=0, eos_token_id=None)
    row = out.scores[1][0].log_softmax(-1)
    context = ids[0].tolist()

    def first_token(label: str) -> int:  # the label's first token after the text
        whole = tok(text + label, add_special_tokens=False)["input_ids"]
        assert whole[:len(context)] == context
        return whole[len(context)]
    unsafe, safe = (float(row[first_token(t)]) for t in ("unsafe", "safe"))
    assert verdict.score == pytest.approx(1 / (1 + math.exp(safe - unsafe)), abs=1e-5)
    assert json.loads(json.dumps(verdict.raw))[0]["position"] == 1


SAMPLE = Path(__file__).resolve().parents[1] / "src/localeval/data/sample/safety/items.jsonl"


@pytest.mark.slow
def test_each_new_reading_end_to_end_on_a_tiny_model(tiny_llama, tmp_path):
    """`localeval run` of each id a newer reading serves, named by its Hub id, on the tiny
    model (every label kept: ``top-N`` with N the vocabulary, so a random model's labels are
    found): the run records the family, the position Parallax-AI reads (Llama Guard 4 new token
    1, ShieldGemma and SEALGuard 0), and each sample's score is the harmful label's share of
    the two labels' recorded probabilities."""
    from transformers import AutoTokenizer

    from localeval.cli import main

    vocabulary = len(AutoTokenizer.from_pretrained(tiny_llama))
    runs = [("meta-llama/Llama-Guard-4-12B", "llamaguard4", ["reading=parallax"], 1,
             ("unsafe", "safe")),
            ("google/shieldgemma-2b", "shieldgemma", ["reading=parallax"], 0, ("Yes", "No")),
            ("MickyMike/SEALGuard-1.5B", "sealguard", [], 0, ("unsafe", "safe"))]
    for guard, family, options, position, (harmful, safe) in runs:
        out = tmp_path / family
        flags = [x for o in [*options, f"label_scores=top-{vocabulary}"]
                 for x in ("--guard-option", o)]
        assert main(["run", "--task", "sea-safeguard", "--data", str(SAMPLE), "--guard", guard,
                     *flags, "--model", f"hf:{tiny_llama}", "--limit", "1", "--lang", "en",
                     "--bootstrap", "0", "--no-report", "--output", str(out), "--quiet",
                     "--no-store"]) == 0
        config = json.loads((out / "config.json").read_text(encoding="utf-8"))
        assert config["guard"]["name"] == family
        samples = [json.loads(line) for line in
                   (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
        assert samples
        for s in samples:
            (read,) = s["guard_output"]
            assert read["position"] == position, (family, read)
            lp = read["logprobs"]
            expected = 1 / (1 + math.exp(lp[safe] - lp[harmful]))
            assert s["score"] == pytest.approx(expected, rel=1e-9), family
