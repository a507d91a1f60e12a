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
    asked = body.get("top_logprobs") or 0
    content = [{"token": top[0][0], "logprob": top[0][1],
                "top_logprobs": [{"token": t, "logprob": v} for t, v in top[:asked]]}
               for top in kept]
    return json.dumps({"choices": [{"index": 0, "message": {
        "role": "assistant", "content": "".join(top[0][0] for top in kept)},
        "logprobs": {"content": content}, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": len(kept)}}).encode()


def _zero_shot_on_server(positions, tmp_path, top_logprobs=20, replies=None, **options):
    """The zero-shot guard's verdict on one prompt from a server replying ``positions`` (or,
    for the n-th post, ``replies[n]``), and what was posted to it."""
    from localeval.backends.openai_compat import OpenAIBackend

    tokenizer = tmp_path / "tok"
    if not tokenizer.exists():
        tokenizer.mkdir()
        save_tokenizer(tokenizer)  # SmolLM2's: "Harmful" is "Harm" + "ful", as IRIS keys it
    posted: list[dict] = []

    def reply(path, body):
        posted.append(body)
        return _chat_reply((replies or {}).get(len(posted) - 1, positions), body)
    with ScriptedServer(reply) as server:
        backend = OpenAIBackend("m", base_url=server.url, max_retries=0,
                                tokenizer=str(tokenizer), top_logprobs=top_logprobs)
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


def test_hf_decodes_until_the_first_labelled_position_as_iris_generate(tmp_path):
    """The hf backend against transformers' greedy generate() read as IRIS reads it: per
    generated position the top 2 of the full distribution, the first holding a candidate.
    The candidates are tokens the untied random model writes at its 4th step and never before
    among its top 2, so the verdict is at a later position than the first."""
    import torch
    from tiny_models import make_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from localeval.backends.hf import HFBackend

    folder = make_model(tmp_path / "m", tied=False)
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32).eval()
    prompt = "Is this safe?"
    ids = tok(prompt, return_tensors="pt")["input_ids"]
    out = model.generate(ids, max_new_tokens=12, do_sample=False, output_scores=True,
                         return_dict_in_generate=True, pad_token_id=0)
    tops = [s[0].log_softmax(-1).topk(2).indices.tolist() for s in out.scores]
    seen = {t for top in tops[:3] for t in top}
    later = [t for p in range(3, 12) for t in tops[p] if t not in seen]
    first = next(p for p in range(3, 12) if set(tops[p]) & set(later[:1]))
    candidates = (tok.decode([later[0]]), "\u0e01\u0e02")  # a word it never writes
    backend = HFBackend(str(folder), dtype="float32", device="cpu")
    request = ScoreNext(prompt, candidates, top=2, positions=12)
    assert backend._score_tokens(request)[1][0] == later[0]
    (got,) = backend.run([request])
    scores = out.scores[first][0].log_softmax(-1)
    assert got.position == first
    assert got.ranks[candidates[0]] is not None and got.ranks[candidates[1]] is None
    assert got.logprobs[candidates[0]] == pytest.approx(float(scores[later[0]]), abs=1e-5)
    (fixed,) = backend.run([ScoreNext(prompt, candidates, top=2)])
    assert fixed.position is None and fixed.ranks == dict.fromkeys(candidates)
    (short,) = backend.run([ScoreNext(prompt, candidates, top=2, positions=first)])
    assert short.position is None and short.ranks == dict.fromkeys(candidates)  # not reached


def test_fixed_restores_the_one_position_reading_and_is_recorded(tmp_path):
    """``verdict_position=fixed``: one token asked for, the first position read, the scenario
    fails as before issue 49; the option is in the guard's options (config.json)."""
    verdict, posts = _zero_shot_on_server(SCENARIO, tmp_path, verdict_position="fixed")
    assert verdict.error == "no label among the top log-probs at the verdict position"
    assert posts[0][1]["max_tokens"] == 1
    guard = get_guard("zero-shot", verdict_position="fixed")
    assert guard.options.given == {"verdict_position": "fixed"}
    assert guard.verdict_position_used == "fixed"
    assert get_guard("zero-shot").verdict_position_used == "first-label"
    assert get_guard("llamaguard4").new_tokens == 10  # IRIS LlamaGuard4: max_new_tokens=10
    assert get_guard("zero-shot", reasoning=True).verdict_position_used is None
    from localeval.errors import LocalevalError

    with pytest.raises(LocalevalError, match="option verdict_position must be one of first-label, fixed, not 'last'"):
        get_guard("llamaguard3", verdict_position="last")
    with pytest.raises(LocalevalError, match="fixed position, as its authors do"):
        get_guard("shieldgemma", verdict_position="fixed")


def test_full_and_top_n_under_the_first_labelled_position(tmp_path):
    """``full``: the position is still the first whose top 2 (the authors' k) holds a label;
    both labels are read there over what the server gave (here its top 20). ``top-1``: the
    first position whose top 1 holds a label, the other label 0."""
    positions = [[("**", -0.1), ("Harm", -2.4), ("The", -2.5)],
                 [("Harm", -0.05), ("Safe", -3.2), ("x", -4.0)]]
    full, _ = _zero_shot_on_server(positions, tmp_path, label_scores="full")
    # position 0's top 2 is "**", "Harm": read there, both labels over their values there,
    # "Safe" not among the 3 given at position 0: no value, so the verdict fails
    assert full.score is None and "'Safe': None" in full.error
    both = [[("**", -0.1), ("Harm", -2.4), ("Safe", -2.6)], positions[1]]
    full, _ = _zero_shot_on_server(both, tmp_path, label_scores="full")
    assert full.score == pytest.approx(math.exp(-2.4) / (math.exp(-2.4) + math.exp(-2.6)))
    top2, _ = _zero_shot_on_server(both, tmp_path)  # top 2 at position 0: "Harm" alone
    assert top2.score == 1.0
    top1, _ = _zero_shot_on_server(both, tmp_path, label_scores="top-1")
    assert top1.score == 1.0 and top1.raw[0]["position"] == 1  # "Harm" first at position 1
    none = [[("**", -0.1), ("The", -2.5)]] * 3
    failed, _ = _zero_shot_on_server(none, tmp_path)
    assert failed.error == "no label among the top log-probs at the verdict position"
    failed, _ = _zero_shot_on_server(none, tmp_path, label_scores="full")
    assert failed.error == "no label among the top log-probs at the verdict position"


def test_each_position_is_asked_only_the_k_that_finds_the_label(tmp_path):
    """The CI failure of stop 56: with --top-logprobs 49152 (as label_scores=full needs on a
    vLLM server) the first-label request asked each of 100 positions for all 49,152 top
    log-probs, and the vLLM CPU server stopped answering. Finding the position needs the top k
    (2) alone: that is asked, one request, the same verdict."""
    verdict, posts = _zero_shot_on_server(SCENARIO, tmp_path, top_logprobs=49152)
    assert verdict.score == pytest.approx(IRIS_SCORE, abs=1e-12)
    (_, body), = posts
    assert body["max_tokens"] == 100 and body["top_logprobs"] == 2


def test_full_reads_the_position_found_again_with_every_log_prob_asked(tmp_path):
    """``full``: the first request finds the labelled position with the top 2; "Safe" is 3rd
    there, so that position is read again alone (max_tokens = its index + 1) with
    --top-logprobs, and scored as one request asking every position for them all would be."""
    positions = [[("**", -0.1), ("The", -2.5), ("Safe", -6.0)],
                 [("Harm", -0.05), ("x", -3.0), ("Safe", -3.2)]]
    full, posts = _zero_shot_on_server(positions, tmp_path, label_scores="full")
    assert full.error is None and full.raw[0]["position"] == 1
    assert full.score == pytest.approx(IRIS_SCORE, abs=1e-12)
    assert [(b["max_tokens"], b["top_logprobs"]) for _, b in posts] == [(100, 2), (2, 20)]
    # both labels among the top 2 where found: nothing read again
    both = [[("Harm", -0.7), ("Safe", -0.9)]]
    full, posts = _zero_shot_on_server(both, tmp_path, label_scores="full")
    assert full.score == pytest.approx(math.exp(-0.7) / (math.exp(-0.7) + math.exp(-0.9)))
    assert len(posts) == 1
    # --top-logprobs no larger than k: nothing more to ask, the label without a value fails
    full, posts = _zero_shot_on_server(positions, tmp_path, top_logprobs=2,
                                       label_scores="full")
    assert full.score is None and "'Safe': None" in full.error and len(posts) == 1


def test_a_second_read_that_finds_another_position_fails_with_the_reason(tmp_path):
    """The second request must find the label where the first did (the same greedy tokens):
    a server whose greedy tokens changed is a failure naming both positions, not a score."""
    positions = [[("**", -0.1), ("The", -2.5)],
                 [("Harm", -0.05), ("x", -3.0), ("Safe", -3.2)]]
    moved = {1: [[("Harm", -0.2), ("x", -1.0), ("Safe", -3.0)], positions[1]]}
    verdict, posts = _zero_shot_on_server(positions, tmp_path, replies=moved,
                                          label_scores="full")
    assert verdict.score is None and len(posts) == 2
    assert "greedy tokens changed between two requests" in verdict.error
    assert "position 1, then at 0" in verdict.error


def test_both_reads_are_counted(tmp_path):
    """The answer of a position read again carries the tokens of both replies (each was
    paid for); a request not wanting the whole vocabulary keys the cache as before."""
    from localeval.backends.base import request_fields
    from localeval.backends.openai_compat import OpenAIBackend

    positions = [[("**", -0.1), ("The", -2.5)],
                 [("Harm", -0.05), ("x", -3.0), ("Safe", -3.2)]]
    tokenizer = tmp_path / "tok"
    tokenizer.mkdir()
    save_tokenizer(tokenizer)
    request = ScoreNext([{"role": "user", "content": "p"}], ("Harmful", "Safe"), top=2,
                        positions=100, whole_vocabulary=True)
    with ScriptedServer(lambda path, body: _chat_reply(positions, body)) as server:
        backend = OpenAIBackend("m", base_url=server.url, max_retries=0,
                                tokenizer=str(tokenizer))
        (got,) = backend.run([request])
    assert got.position == 1 and got.logprobs["Safe"] == -3.2
    assert (got.n_prompt_tokens, got.n_completion_tokens) == (20, 4)  # 10 + 10, 2 + 2
    assert "whole_vocabulary" not in request_fields(ScoreNext("p", ("a",), top=2,
                                                              positions=3))
    assert request_key({}, request) != request_key({}, ScoreNext(
        request.prompt, request.candidates, top=2, positions=100))
    with pytest.raises(ValueError, match="set positions too"):
        ScoreNext("p", ("a",), top=2, whole_vocabulary=True)


def test_the_reading_keys_the_cache():
    """A first-label request is another cache entry than the fixed one; a request without the
    field keys as before it existed."""
    from localeval.backends.base import request_fields

    fixed = ScoreNext("p", ("Harmful", "Safe"), top=2)
    first = ScoreNext("p", ("Harmful", "Safe"), top=2, positions=100)
    assert "positions" not in request_fields(fixed)
    assert request_key({}, fixed) != request_key({}, first)
    with pytest.raises(ValueError, match="with top set"):
        ScoreNext("p", ("a", "b"), positions=3)


def test_vllm_engine_reads_its_generated_positions_in_turn():
    """The engine's reply (vLLM ``CompletionOutput.logprobs``: per generated position, token
    id -> Logprob, the top k plus the token written) read position by position: the issue's
    scenario with token ids 7 ("**"), 8 ("The"), 1 ("Harm"), 2 ("Safe")."""
    from types import SimpleNamespace

    from localeval.backends.vllm_engine import VllmBackend

    def step(**values):
        return {int(t[1:]): SimpleNamespace(logprob=v) for t, v in values.items()}

    steps = [step(t7=-0.1, t8=-2.5), step(t1=-0.05, t2=-3.2)]
    output = SimpleNamespace(outputs=[SimpleNamespace(token_ids=[7, 1], text="**Harm",
                                                      logprobs=steps)])
    engine = SimpleNamespace(stats={"requests": 0, "prompt_tokens": 0, "generated_tokens": 0})
    request = ScoreNext("p", ("Harmful", "Safe"), top=2, positions=100)
    got = VllmBackend._read(engine, request, [5, 6], [1, 2], output)
    assert (got.position, got.ranks) == (1, {"Harmful": 1, "Safe": 2})
    guard = get_guard("zero-shot")
    from localeval.guards.staged import binary_verdict

    assert binary_verdict([guard._read(got)], "Harmful", "Safe").score == \
        pytest.approx(IRIS_SCORE, abs=1e-12)
    none = SimpleNamespace(outputs=[SimpleNamespace(token_ids=[7], text="**",
                                                    logprobs=steps[:1])])
    missed = VllmBackend._read(engine, request, [5, 6], [1, 2], none)
    assert missed.position is None and missed.ranks == {"Harmful": None, "Safe": None}


def test_vllm_engine_reads_a_label_outside_its_top_20_in_a_second_pass(monkeypatch):
    """Under label_scores=full (``whole_vocabulary``) the engine finds the position with each
    position's top log-probs, then reads the label missing there by id in a second pass up to
    that position (``logprob_token_ids``), whose greedy tokens must be the first pass's."""
    from types import SimpleNamespace

    from localeval.backends import vllm_engine
    from localeval.backends.vllm_engine import VllmBackend

    def step(**values):
        return {int(t[1:]): SimpleNamespace(logprob=v) for t, v in values.items()}

    first = SimpleNamespace(outputs=[SimpleNamespace(
        token_ids=[7, 1], text="", logprobs=[step(t7=-0.1, t8=-2.5), step(t1=-0.05, t9=-3.0)])])
    asked = []

    def generate(block):
        asked.append([params for _, _, params, _ in block])
        if len(asked) == 1:
            return [first]
        return [second]
    engine = object.__new__(VllmBackend)
    engine.stats = {"requests": 0, "prompt_tokens": 0, "generated_tokens": 0}
    monkeypatch.setattr(engine, "_plan", lambda request: ([5, 6], "first pass", [1, 2]),
                        raising=False)
    monkeypatch.setattr(engine, "_generate", generate, raising=False)
    monkeypatch.setattr(vllm_engine, "_whole_params", lambda p, targets: ("again", p, targets))
    request = ScoreNext("p", ("Harmful", "Safe"), top=2, positions=100, whole_vocabulary=True)
    second = SimpleNamespace(outputs=[SimpleNamespace(
        token_ids=[7, 1], text="", logprobs=[step(t1=-9.0, t2=-9.5), step(t1=-0.05, t2=-3.2)])])
    (got,) = engine.run([request])
    assert asked == [["first pass"], [("again", 1, [1, 2])]]
    assert got.position == 1 and got.logprobs == {"Harmful": -0.05, "Safe": -3.2}
    guard = get_guard("zero-shot", label_scores="full")
    from localeval.guards.staged import binary_verdict

    assert binary_verdict([guard._read(got)], "Harmful", "Safe").score == \
        pytest.approx(IRIS_SCORE, abs=1e-12)
    # greedy tokens that changed between the passes: a failure with the reason
    asked.clear()
    second = SimpleNamespace(outputs=[SimpleNamespace(
        token_ids=[8, 1], text="", logprobs=[step(t1=-9.0), step(t1=-0.05, t2=-3.2)])])
    (got,) = engine.run([request])
    assert "greedy tokens changed between two passes" in got.error
    # not whole_vocabulary: one pass, the label without a value kept so (ranks decide)
    asked.clear()
    (got,) = engine.run([ScoreNext("p", ("Harmful", "Safe"), top=2, positions=100)])
    assert len(asked) == 1 and got.logprobs == {"Harmful": -0.05, "Safe": None}


def test_the_leaderboard_tells_the_readings_apart():
    """A folder from before issue 49 (no ``verdict_position``) and one read ``fixed`` are apart
    from the paper's protocol; one read where the authors read it is not."""
    from localeval.views.safety import SafetyView

    view = SafetyView()
    paper = view.paper_protocol("sea-safeguard")
    assert paper is not None and paper["verdict position"] == "authors'"
    assert view.protocol({"verdict_position": "first-label"})["verdict position"] == "authors'"
    assert view.protocol({"verdict_position": None})["verdict position"] == "authors'"
    assert view.protocol({"verdict_position": "fixed"})["verdict position"] == "fixed"
    assert view.protocol({})["verdict position"] == "fixed"


def test_fixed_under_llamaguard3s_own_template_says_what_it_reads():
    """Issue 64 item 7: ``fixed`` reads the position right after the prompt. Under
    ``template=own`` nothing follows the checkpoint's template, which on Llama Guard 3 ends at
    the assistant header: that position is the model's own "\\n\\n" (Parallax-AI reads the
    second generated token), no label on a real Llama Guard 3, and not the reading of before
    issue 49 (after our "\\n\\n" prefill on the hand-written templates, which hf and meta
    keep). It stays an option (a test model's template ends elsewhere); what the guard says
    it reads says so, and the failure advice does not offer it there."""
    own = get_guard("llamaguard3", verdict_position="fixed")
    assert own.verdict_position_used == "fixed"
    # no "\\n\\n" prefill of ours after the header under its own template
    assert "<|end_header_id|>\\n\\n" not in own.verdict_position
    assert "right after the template: on Llama Guard 3 the model's own '\\n\\n', no label" \
        in own.verdict_position
    assert not get_guard("llamaguard3").fixed_advisable
    for template in ("hf", "meta"):
        guard = get_guard("llamaguard3", template=template, verdict_position="fixed")
        assert guard.fixed_advisable
        assert guard.requests(Conversation("p"))[0].prompt.endswith(
            "<|start_header_id|>assistant<|end_header_id|>\n\n")
