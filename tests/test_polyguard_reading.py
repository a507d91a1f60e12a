"""Issue 64 item 2: PolyGuard's verdicts read as IRIS reads them. IRIS
``guard_models/poly_guard.py`` sends the bare chat (``_apply_safeguard_template``: system +
user, no prefill) and ``predict`` takes ``pred_labels[0]`` for a prompt (l.119) and
``pred_labels[2]`` for a response (l.127), over ``guard_models/base.py:37-60``
``GuardLLM.complete``'s list of the generated positions whose top ``len(valid_tokens)`` (2)
holds `` yes`` / `` no``. A stray label among a non-verdict position's top 2 is one of them.
``reading=prefill`` is ours before issue 64."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
from scripted_server import ScriptedServer
from test_verdict_position import _chat_reply
from tiny_models import save_tokenizer

from localeval.backends.base import Direct, ScoreNext, request_key
from localeval.errors import LocalevalError
from localeval.guards import Conversation, get_guard

# The model's answer, position by position (top 2 each, the first written): its third
# labelled position is "Response refusal:"'s, since "Request safety violations:"'s top 2
# holds a stray " no".
ANSWER = [
    [("Harmful request:", -0.01), ("x", -5.0)],
    [(" yes", -0.2), (" no", -1.8)],                     # labelled 0: the request
    [("\nRequest safety violations:", -0.01), ("y", -6.0)],
    [(" None", -0.3), (" no", -1.4)],                    # labelled 1: a stray " no"
    [("\nResponse refusal:", -0.01), ("z", -6.0)],
    [(" yes", -0.1), (" no", -2.4)],                     # labelled 2: IRIS's response verdict
    [("\nHarmful response:", -0.01), ("w", -6.0)],
    [(" no", -0.01), (" yes", -4.0)],                    # labelled 3: the response's own line
]
# By hand: P(yes) = e^-0.1 / (e^-0.1 + e^-2.4) = 1 / (1 + e^-2.3) = 0.908877 (IRIS, response);
# the request: e^-0.2 / (e^-0.2 + e^-1.8) = 1 / (1 + e^-1.6) = 0.832018
IRIS_RESPONSE = 1 / (1 + math.exp(-2.3))
IRIS_PROMPT = 1 / (1 + math.exp(-1.6))
# ours before (reading=prefill): after "Harmful response:", e^-4 / (e^-0.01 + e^-4)
OURS_RESPONSE = math.exp(-4.0) / (math.exp(-0.01) + math.exp(-4.0))


def _on_server(conversation, tmp_path, answer=None, **options):
    from localeval.backends.openai_compat import OpenAIBackend

    tokenizer = tmp_path / "tok"
    if not tokenizer.exists():
        tokenizer.mkdir()
        save_tokenizer(tokenizer)
    with ScriptedServer(lambda path, body: _chat_reply(answer or ANSWER, body)) as server:
        backend = OpenAIBackend("m", base_url=server.url, max_retries=0,
                                tokenizer=str(tokenizer), top_logprobs=20)
        (verdict,) = get_guard("polyguard", **options).classify([conversation],
                                                                Direct(backend))
    return verdict, server.posts


def test_polyguard_reads_the_third_labelled_position_of_its_answer_as_iris(tmp_path):
    verdict, posts = _on_server(Conversation("p", "r"), tmp_path)
    assert verdict.error is None
    assert round(verdict.score, 4) == 0.9089
    assert verdict.score == pytest.approx(IRIS_RESPONSE, abs=1e-12)
    assert round(OURS_RESPONSE, 4) == 0.0182  # what our prefilled reading gave the same answer
    (_, body), = posts
    assert [m["role"] for m in body["messages"]] == ["system", "user"]  # no prefill
    assert body["max_tokens"] == 100 and body["top_logprobs"] == 2
    prompt, _ = _on_server(Conversation("p"), tmp_path)
    assert prompt.score == pytest.approx(IRIS_PROMPT, abs=1e-12)


def test_an_answer_with_fewer_labelled_positions_has_no_response_verdict(tmp_path):
    """``pred_labels[2]`` absent (two labelled positions): ``response_labels`` [], no label."""
    from localeval.backends.ranked_reading import first_ranked
    from localeval.backends.replies import Top

    request = ScoreNext("p", (" yes", " no"), top=2, positions=100, labelled=2)
    each = [[Top(t, v) for t, v in top] for top in ANSWER[:5]]
    read = first_ranked(request, each, {}, 2)
    assert read.position is None and read.ranks == {" yes": None, " no": None}
    assert first_ranked(request, [[Top(t, v) for t, v in top] for top in ANSWER], {},
                        2).position == 5


def test_the_vllm_engine_counts_labelled_positions_alike():
    from localeval.backends.vllm_engine import VllmBackend

    # token ids: 1 " yes", 2 " no", 7.. the other tokens
    steps = [{7: -0.01, 8: -5.0}, {1: -0.2, 2: -1.8}, {9: -0.01, 10: -6.0},
             {11: -0.3, 2: -1.4}, {12: -0.01, 13: -6.0}, {1: -0.1, 2: -2.4}]
    output = SimpleNamespace(outputs=[SimpleNamespace(
        token_ids=[7, 1, 9, 11, 12, 1], text="",
        logprobs=[{t: SimpleNamespace(logprob=v) for t, v in s.items()} for s in steps])])
    engine = SimpleNamespace(stats={"requests": 0, "prompt_tokens": 0, "generated_tokens": 0})
    request = ScoreNext("p", (" yes", " no"), top=2, positions=100, labelled=2)
    got = VllmBackend._read(engine, request, [5, 6], [1, 2], output)
    assert got.position == 5 and got.logprobs == {" yes": -0.1, " no": -2.4}


def test_prefill_restores_our_reading_and_the_options_that_need_it():
    guard = get_guard("polyguard", reading="prefill")
    (first,) = guard.requests(Conversation("p", "r"))
    assert first.kind == "generate" and first.prompt[-1] == {"role": "assistant",
                                                             "content": "Harmful request:"}
    assert get_guard("polyguard", reading="prefill", verdict_position="fixed")
    with pytest.raises(LocalevalError, match="reading=prefill"):
        get_guard("polyguard", verdict_position="fixed")
    with pytest.raises(LocalevalError, match="reading=prefill"):
        get_guard("polyguard", label_scores="full")
    with pytest.raises(LocalevalError, match="answer, prefill"):
        get_guard("polyguard", reading="lines")
    plain = ScoreNext("p", ("a", "b"), top=2, positions=100)
    assert request_key({}, plain) == request_key({}, ScoreNext("p", ("a", "b"), top=2,
                                                               positions=100, labelled=0))
    assert request_key({}, plain) != request_key({}, ScoreNext("p", ("a", "b"), top=2,
                                                               positions=100, labelled=2))


def test_hf_decodes_to_the_nth_labelled_position(tmp_path):
    """``hf:`` against transformers' greedy generate() read as IRIS reads it: the labelled
    positions are those whose top 2 (of the full distribution) hold a candidate (here the
    tokens the untied random model writes 3rd and 6th); with ``labelled=1`` the second of
    them is read."""
    import torch
    from tiny_models import make_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from localeval.backends.hf import HFBackend

    folder = make_model(tmp_path / "m", tied=False)
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32).eval()
    prompt = "Is this safe?"
    ids = tok(prompt, return_tensors="pt")["input_ids"]
    out = model.generate(ids, max_new_tokens=40, do_sample=False, output_scores=True,
                         return_dict_in_generate=True, pad_token_id=0)
    tops = [s[0].log_softmax(-1).topk(2).indices.tolist() for s in out.scores]
    written = out.sequences[0, ids.shape[1]:].tolist()
    labels = (written[2], written[5])  # each in the top 2 where it is written
    labelled = [p for p, top in enumerate(tops) if set(labels) & set(top)]
    assert len(labelled) >= 2 and labelled[0] <= 2
    candidates = tuple(tok.decode([t]) for t in labels)
    backend = HFBackend(str(folder), dtype="float32", device="cpu")
    request = ScoreNext(prompt, candidates, top=2, positions=40, labelled=1)
    if backend._score_tokens(request)[1] != list(labels):
        pytest.skip("a decoded token does not tokenise back to itself after the prompt")
    (got,) = backend.run([request])
    assert got.position == labelled[1]
    row = out.scores[labelled[1]][0].log_softmax(-1)
    for candidate, token in zip(candidates, labels, strict=True):
        assert got.logprobs[candidate] == pytest.approx(float(row[token]), abs=1e-5)
    (past,) = backend.run([ScoreNext(prompt, candidates, top=2, positions=40,
                                     labelled=len(labelled))])
    assert past.position is None and past.ranks == dict.fromkeys(candidates)
    # Parallax-AI's readings (reading=parallax): the last labelled position, and one index
    (last,) = backend.run([ScoreNext(prompt, candidates, top=2, positions=40, labelled=-1)])
    assert last.position == labelled[-1]
    row = out.scores[labelled[-1]][0].log_softmax(-1)
    assert last.logprobs[candidates[0]] == pytest.approx(float(row[labels[0]]), abs=1e-5)
    (fifth,) = backend.run([ScoreNext(prompt, candidates, top=2, positions=40, at=4)])
    row = out.scores[4][0].log_softmax(-1)
    assert fifth.position == 4
    assert fifth.logprobs[candidates[1]] == pytest.approx(float(row[labels[1]]), abs=1e-5)


# ANSWER as a server answers top_logprobs=20: each position's list filled up to 20 entries
ANSWER20 = [top + [(f"f{i}", -7.0 - i / 10) for i in range(20 - len(top))] for top in ANSWER]


def test_parallax_reads_the_sixth_token_and_the_last_labelled_position(tmp_path):
    """Parallax-AI c853033 ``polyguard_module.py:9-31``: the same bare chat, 100 new tokens
    with their top 20 (``base_module.py:71-75``); a prompt's verdict at ``logprobs[5]``
    (l.12), a response's at the last position whose top 20 holds a label (l.14-16). On ANSWER
    by hand: the prompt at position 5 [yes -0.1, no -2.4]: 1 / (1 + e^-2.3) = 0.908877; the
    response at position 7 [no -0.01, yes -4.0]: e^-4 / (e^-0.01 + e^-4) = 0.018164."""
    prompt, posts = _on_server(Conversation("p"), tmp_path, ANSWER20, reading="parallax")
    assert prompt.score == pytest.approx(0.908877, abs=1e-6)
    (_, body), = posts
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["max_tokens"] == 100 and body["top_logprobs"] == 20
    response, _ = _on_server(Conversation("p", "r"), tmp_path, ANSWER20, reading="parallax")
    assert response.score == pytest.approx(0.018164, abs=1e-6)
    assert response.score == pytest.approx(OURS_RESPONSE, abs=1e-12)
    # 8348665 took the top 2 of each position: the same here (two listed), asked for 2
    _, posts = _on_server(Conversation("p"), tmp_path, ANSWER20, reading="parallax",
                          label_scores="top-2")
    assert posts[0][1]["top_logprobs"] == 2


def test_parallax_positions_in_each_reader():
    from localeval.backends.ranked_reading import first_ranked
    from localeval.backends.replies import Top
    from localeval.backends.vllm_engine import VllmBackend

    each = [[Top(t, v) for t, v in top] for top in ANSWER20]
    at = ScoreNext("p", (" yes", " no"), top=20, positions=100, at=5)
    last = ScoreNext("p", (" yes", " no"), top=20, positions=100, labelled=-1)
    assert first_ranked(at, each, {}, 20).position == 5
    assert first_ranked(last, each, {}, 20).position == 7
    short = first_ranked(at, each[:5], {}, 20)  # fewer than six positions: none read
    assert short.position is None and short.ranks == {" yes": None, " no": None}
    assert first_ranked(last, each[:1], {}, 20).position is None
    assert request_key({}, at) != request_key({}, ScoreNext("p", (" yes", " no"), top=20,
                                                            positions=100))
    steps = [{7: -0.01, 8: -5.0}, {1: -0.2, 2: -1.8}, {9: -0.01, 10: -6.0},
             {11: -0.3, 2: -1.4}, {12: -0.01, 13: -6.0}, {1: -0.1, 2: -2.4}, {14: -0.1}]
    output = SimpleNamespace(outputs=[SimpleNamespace(
        token_ids=[7, 1, 9, 11, 12, 1, 14], text="",
        logprobs=[{t: SimpleNamespace(logprob=v) for t, v in s.items()} for s in steps])])
    engine = SimpleNamespace(stats={"requests": 0, "prompt_tokens": 0, "generated_tokens": 0})
    got = VllmBackend._read(engine, at, [5, 6], [1, 2], output)
    assert got.position == 5 and got.logprobs == {" yes": -0.1, " no": -2.4}
    got = VllmBackend._read(engine, last, [5, 6], [1, 2], output)
    assert got.position == 5 and got.logprobs == {" yes": -0.1, " no": -2.4}
    with pytest.raises(ValueError, match="ScoreNext.at"):
        ScoreNext("p", ("a", "b"), top=2, positions=5, at=5)
    guard = get_guard("polyguard", reading="parallax")
    assert guard.label_top == 20
    with pytest.raises(LocalevalError, match="reading=prefill"):
        get_guard("polyguard", reading="parallax", label_scores="full")
