"""``--scoring`` on ``openai:``: multiple choice read from prompt + option echoed (lm-eval's
``local-completions`` way), against a loopback server running a real model
(:mod:`openai_server`, vLLM's reply shapes; its ``max_logprobs`` refuses a larger top-k as vLLM
does). The real vLLM and llama.cpp servers: ``test_vllm_defaults.py``,
``test_llama_cpp_server.py``."""

from __future__ import annotations

import json

import pytest
from openai_server import ModelServer
from scripted_server import ScriptedServer

from localeval.api import evaluate
from localeval.backends.async_http import Malformed
from localeval.backends.base import Failed, NextLogprobs, Response, ScoreNext, error_of
from localeval.backends.echo_scoring import (
    CHAT,
    PROBE_TOP,
    Echoed,
    combine,
    echo_posts,
    echoed_each,
    tokenized,
)
from localeval.backends.hf import HFBackend
from localeval.backends.label_tokens import LabelTokenError
from localeval.backends.openai_compat import OpenAIBackend
from localeval.cli import main

TOL = 1e-4  # the loopback server runs the same weights through transformers (float32)
# the echo probe's requests, once per backend: the top next tokens, then each echoed
PROBE = 1 + PROBE_TOP
PROMPT = "問題：一加一等於幾？\nA. 一\nB. 二\n答案："


@pytest.fixture(scope="module")
def capped(tiny_llama):
    """A server that refuses more than 5 top log-probs, as vLLM started with
    ``--max-logprobs 5`` does."""
    s = ModelServer(tiny_llama, max_logprobs=5)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def hf(tiny_llama):
    return HFBackend(str(tiny_llama))


def test_auto_redoes_in_echo_what_the_top_k_lacks_and_equals_hf(capped, hf):
    """Top 2 of a random model's vocabulary holds no option: the request is redone in echo
    (1 + 2 completions), reported once, and its log-probs are ``hf:``'s. A guard's request
    (``echo`` False) keeps the top-k rule and fails as before."""
    backend = OpenAIBackend("tiny", base_url=capped.url, top_logprobs=2)
    mcq = ScoreNext(PROMPT, ("A", "B"), echo=True)
    guard = ScoreNext(PROMPT, ("A", "B"))
    reported: list[tuple[int, Response]] = []
    capped.received.clear()
    out = backend.run([mcq, guard], lambda i, r: reported.append((i, r)))
    assert sorted(i for i, _ in reported) == [0, 1]  # each once: the top-k miss never reported
    assert out[0].scoring == "echo" and error_of(out[0]) is None
    (want,) = hf.run([mcq])
    assert out[0].logprobs == pytest.approx(want.logprobs, abs=TOL)
    # a failure carries no scoring mode (Failed has only its reason): the guard's request
    # failed on the top-k reply, never echoed
    assert isinstance(out[1], Failed) and "no candidate among the top 2" in out[1].error
    # two top-k requests, the echo probe (the top tokens after the prompt, the prompt and one
    # of them echoed: once per backend), then the echo of one request
    assert len(capped.received) == 2 + PROBE + 2  # its options: the context is tokenized
    assert backend.identity["scoring"] == "auto"


def test_a_top_k_the_server_refuses_is_redone_in_echo(capped, hf):
    backend = OpenAIBackend("tiny", base_url=capped.url, top_logprobs=20)  # over its 5
    request = ScoreNext(PROMPT + " ", ("A", "B"), echo=True)  # its space moves to " A"
    (out,) = backend.run([request])
    assert error_of(out) is None and out.scoring == "echo"
    (want,) = hf.run([request])
    assert out.logprobs == pytest.approx(want.logprobs, abs=TOL)


def test_options_the_top_k_cannot_name_are_read_in_context_by_echo(capped, hf, monkeypatch):
    """Options whose first tokens, each tokenised alone by the server, clash (the label-token
    lookup, simulated here) failed before anything was read: auto reads them in context, where
    they differ, as hf: does; top-k mode still fails them with the reason."""
    request = ScoreNext(PROMPT, (" A", " B"), echo=True)

    def clash(candidates):
        raise LabelTokenError(f"candidates {tuple(candidates)} share a first token; "
                              "ScoreNext reads one position")

    auto = OpenAIBackend("tiny", base_url=capped.url)
    monkeypatch.setattr(auto.labels, "names", clash)
    (out,) = auto.run([request])
    assert error_of(out) is None and out.scoring == "echo"
    assert out.logprobs == pytest.approx(hf.run([request])[0].logprobs, abs=TOL)
    top_k = OpenAIBackend("tiny", base_url=capped.url, scoring="top-k")
    monkeypatch.setattr(top_k.labels, "names", clash)
    (out,) = top_k.run([request])
    assert "share a first token" in out.error


def test_top_k_mode_never_echoes_and_echo_mode_never_asks_the_top_k(capped):
    request = ScoreNext(PROMPT, ("A", "B"), echo=True)
    capped.received.clear()
    (out,) = OpenAIBackend("tiny", base_url=capped.url, top_logprobs=2,
                           scoring="top-k").run([request])
    assert isinstance(out, Failed) and "top 2" in out.error and len(capped.received) == 1
    capped.received.clear()
    (out,) = OpenAIBackend("tiny", base_url=capped.url, scoring="echo").run([request])
    assert out.scoring == "echo" and error_of(out) is None
    probe, asked = capped.received[:PROBE], capped.received[PROBE:]  # once per backend
    assert probe[0] == PROMPT and all(p.startswith(PROMPT) and p != PROMPT for p in probe[1:])
    assert sorted(asked) == sorted([PROMPT + "A", PROMPT + "B"])


def test_a_chat_prompt_in_echo_mode_fails_alone_with_the_reason(capped):
    chat = ScoreNext([{"role": "user", "content": "一加一？"}], ("A", "B"), echo=True)
    plain = ScoreNext(PROMPT, ("A", "B"), echo=True)
    out = OpenAIBackend("tiny", base_url=capped.url, scoring="echo").run([chat, plain])
    assert out[0].error == CHAT and out[0].reason.permanent
    assert error_of(out[1]) is None


def test_a_whole_run_at_the_default_top_k_equals_hf_and_records_the_mode(capped, tiny_llama,
                                                                       shared, tmp_path):
    common = dict(task="cmmlu", data=shared / "data" / "cmmlu", subjects=["arts"], limit=4,
                  shots=1, quiet=True, store=False)
    ours = evaluate(model=OpenAIBackend("tiny", base_url=capped.url, top_logprobs=5),
                    output=tmp_path / "remote", **common)
    theirs = evaluate(model=f"hf:{tiny_llama}", output=tmp_path / "hf", **common)
    assert ours.results["n_failed"] == 0
    for a, b in zip(ours.samples, theirs.samples, strict=True):
        assert a["scoring"] == "echo" and a["pred"] == b["pred"]
        assert a["logprobs"] == pytest.approx(b["logprobs"], abs=TOL)
    config = json.loads((tmp_path / "remote" / "config.json").read_text())
    assert config["backend"]["scoring"] == "auto"


def test_on_vllm_a_question_is_echoed_in_two_requests_and_equals_hf(capped, hf):
    """Issue 53 item 2. Before: 1 + #options echo requests a question (the context alone
    echoed, each option in its own). On vLLM (its /tokenize, token ids) the context is
    tokenized (no forward pass) and the options go in one /completions request as a list of
    prompts, read by each choice's index; the log-probs stay hf:'s."""
    backend = OpenAIBackend("tiny", base_url=capped.url, scoring="echo")
    # the probe (once per backend) and the options' label tokens, before counting
    backend.run([ScoreNext(PROMPT, ("A", "B", "C", "D"), echo=True)])
    requests = [ScoreNext(PROMPT, ("A", "B", "C", "D"), echo=True),
                ScoreNext(PROMPT + " ", ("A", "B"), echo=True)]
    capped.posts.clear()
    out = backend.run(requests)
    # one /completions a question; /tokenize (no forward pass) for the context and, since
    # issue 63 item 2, each option's whole prompt (its echo must be those tokens)
    assert sorted(capped.posts) == ["/tokenize"] * (5 + 3) + ["/v1/completions"] * 2
    for got, want in zip(out, hf.run(requests), strict=True):
        assert got.scoring == "echo" and got.logprobs == pytest.approx(want.logprobs, abs=TOL)


def test_batch_keeps_one_prompt_a_request(capped):
    """--batch (whose requests keep one prompt each) and a server without vLLM's token ids
    echo one prompt a request, the context too."""
    texts = ["Q:", "Q:A", "Q:B"]
    assert [p.body["prompt"] for p in echo_posts("m", texts, True, True, False)] == texts
    assert [p.body["prompt"] for p in echo_posts("m", texts, True, False, True)] == texts
    listed = echo_posts("m", texts, True, True, True)
    assert [p.body["prompt"] for p in listed] == ["Q:", "Q:A", "Q:B", ["Q:A", "Q:B"]]
    assert [p.path for p in listed] == ["/tokenize"] * 3 + ["/completions"]
    # vLLM echoes each token's own log-prob with logprobs 0: no top-1 beside it
    assert listed[3].body["logprobs"] == 0 and listed[3].body["return_tokens_as_token_ids"]


def _listed(choices, prompt_tokens=6, completion_tokens=2) -> dict:
    return {"choices": choices, "usage": {"prompt_tokens": prompt_tokens,
                                          "completion_tokens": completion_tokens}}


def _choice(index, tokens) -> dict:
    return {"index": index, "text": "", "logprobs": {
        "tokens": tokens + ["token_id:9"], "token_logprobs": [None] + [-1.0] * len(tokens)}}


def test_a_list_reply_is_read_by_index_and_a_wrong_one_is_refused():
    a, b = ["token_id:1", "token_id:2", "token_id:3"], ["token_id:1", "token_id:2", "token_id:4"]
    both = echoed_each(_listed([_choice(1, b), _choice(0, a)]), 4096, 2)  # out of order
    assert [e.tokens for e in both] == [a, b] and both[1].usage is None
    for reply, why in [
            (_listed([_choice(0, a)]), "choices is 1 entries for a list of 2 prompts"),
            (_listed([_choice(0, a), _choice(0, b)]), "index is 0 (repeated)"),
            (_listed([_choice(0, a), _choice(2, b)]), "index is 2 (not one of 0..1)"),
            (_listed([_choice(0, a), {"text": ""}]), "index is None"),
            (_listed([_choice(0, a), _choice(1, b)], prompt_tokens=5), "are not the usage's"),
            ({"choices": [_choice(0, a), _choice(1, b)]}, "are not the usage's")]:
        with pytest.raises(Malformed, match=why.replace("(", r"\(").replace(")", r"\)")):
            echoed_each(reply, 4096, 2)


def test_an_option_merging_with_the_context_is_still_refused_with_tokenize():
    """The context's tokens come from /tokenize: an option whose echo does not start with
    them (it merged with the context's last token) fails alone, as before."""
    merged = _listed([_choice(0, ["token_id:1", "token_id:7"]),
                      _choice(1, ["token_id:1", "token_id:2", "token_id:4"])], prompt_tokens=5)
    request = ScoreNext("Q:", ("A", "B"), echo=True)
    parts = [tokenized({"tokens": [1, 2], "count": 2}), *echoed_each(merged, None, 2)]
    assert "merges with the prompt's last token" in combine(request, parts).error


def _echo_reply(tokens: list[str], values: list) -> bytes:
    return json.dumps({"choices": [{"text": "".join(tokens), "logprobs": {
        "tokens": tokens + ["x"], "token_logprobs": values + [-1.0]}}],
        "usage": {"prompt_tokens": len(tokens), "completion_tokens": 1}}).encode()


@pytest.mark.parametrize("value", [float("nan"), 0.5, "-1"])
def test_an_invalid_echoed_log_prob_fails_the_request_never_a_score(value):
    def reply(path, body):
        if body["prompt"] == "Q:":
            return _echo_reply(["Q", ":"], [None, -1.0])
        return _echo_reply(["Q", ":", body["prompt"][2:]], [None, -1.0, value])

    with ScriptedServer(reply) as server:
        (out,) = OpenAIBackend("m", base_url=server.url, scoring="echo",
                               max_retries=0).run([ScoreNext("Q:", ("A", "B"), echo=True)])
    assert isinstance(out, Failed) and "invalid reply" in out.error and out.reason.permanent, out


def test_combine_refuses_what_one_position_cannot_read():
    context = Echoed(tokens=["Q", ":"], logprobs=[None, -1.0])
    request = ScoreNext("Q:", ("A", "B"), echo=True)
    merged = Echoed(tokens=["Q", ":A"], logprobs=[None, -2.0])
    b = Echoed(tokens=["Q", ":", "B"], logprobs=[None, -1.0, -3.0])
    assert "merges with the prompt's last token" in combine(request, [context, merged, b]).error
    same = Echoed(tokens=["Q", ":", "B", "x"], logprobs=[None, -1.0, -3.0, -1.0])
    assert "share a first token" in combine(request, [context, same, b]).error
    a = Echoed(tokens=["Q", ":", "A"], logprobs=[None, -1.0, -2.5])
    assert combine(request, [context, a, b]) == NextLogprobs(logprobs={"A": -2.5, "B": -3.0},
                                                             scoring="echo")


def test_scoring_flag_is_checked_and_is_the_servers_alone(tmp_path, capsys):
    data = ["run", "--task", "cmmlu", "--data", "../shared/data/cmmlu", "--subjects", "arts",
            "--output", str(tmp_path / "x")]
    assert main([*data, "--model", "hf:/nowhere", "--scoring", "echo"]) == 2
    assert "--scoring" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*data, "--model", "openai:tiny", "--scoring", "exact"])
    assert "invalid choice: 'exact'" in capsys.readouterr().err


def test_a_run_says_how_many_questions_were_echoed(capped, shared, tmp_path, capsys):
    """Issue 52 item 5: auto switched every question to echo (5 requests each) without a line
    saying so; the run now says it where it prints its warnings, and results.json keeps it."""
    run = evaluate(model=OpenAIBackend("tiny", base_url=capped.url, top_logprobs=2),
                   task="cmmlu", data=shared / "data" / "cmmlu", subjects=["arts"], limit=4,
                   shots=1, quiet=True, store=False, output=tmp_path / "run")
    assert all(s["scoring"] == "echo" for s in run.samples)
    note = "4 of 4 questions were read from prompt + option echoed (1 + #options requests each"
    assert any(w.startswith(note) for w in run.results.warnings)
    assert note in capsys.readouterr().err


@pytest.fixture(scope="module")
def echo_after(tiny_llama):
    """A server whose echo reads each prompt token's log-prob from the distribution after it
    (llama-cpp-python does on a model without BOS): each reply is well formed."""
    s = ModelServer(tiny_llama, max_logprobs=5, echo_after=True)
    yield s
    s.stop()


@pytest.mark.parametrize("scoring", ["echo", "auto"])
def test_an_echo_that_reads_the_wrong_position_is_refused_by_one_probe(echo_after, shared,
                                                                        scoring, tmp_path):
    """Issue 47 item 8: on main this run scored every question from the misread echo (exit 0,
    another accuracy than hf:). One probe per backend (the top next tokens after a prompt, then
    the prompt and each echoed) shows the echoed log-prob is not the top-k one: every
    question that needs echo fails with the reason, none is scored."""
    run = evaluate(model=OpenAIBackend("tiny", base_url=echo_after.url, top_logprobs=2,
                                       scoring=scoring),
                   task="cmmlu", data=shared / "data" / "cmmlu", subjects=["arts"], limit=4,
                   shots=1, quiet=True, store=False, output=tmp_path / "run")
    assert run.results["n_failed"] == 4
    for sample in run.samples:
        assert sample["pred"] is None
        assert "the server's echo does not read a token's log-prob where its top log-probs " \
               "do" in sample["error"] and "use --scoring top-k" in sample["error"]


def test_the_probe_is_made_once_per_server_and_passes_a_right_echo(capped, hf):
    backend = OpenAIBackend("tiny", base_url=capped.url, scoring="echo")
    request = ScoreNext(PROMPT, ("A", "B"), echo=True)
    capped.received.clear()
    first = backend.run([request])
    assert len(capped.received) == PROBE + 2  # the probe, then two options
    again = backend.run([request])
    assert len(capped.received) == PROBE + 2 + 2  # no second probe
    (want,) = hf.run([request])
    for (out,) in (first, again):
        assert out.logprobs == pytest.approx(want.logprobs, abs=TOL)


def test_min_k_prob_on_an_echo_that_reads_the_wrong_position_fails_each_text(echo_after,
                                                                             tmp_path):
    texts = tmp_path / "texts.jsonl"
    texts.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in
                             enumerate(["The cat sat on the mat.", "臺灣的首都是臺北。"])))
    out = tmp_path / "run"
    # exit 3: every text failed (over --max-failed 0), none scored
    assert main(["contamination", "--data", str(texts), "--model", "openai:tiny",
                 "--base-url", echo_after.url, "--output", str(out), "--quiet"]) == 3
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert [s["failed"] for s in samples] == [True, True]
    assert all("cannot be scored: Min-k% Prob needs" in s["error"] for s in samples)


@pytest.fixture(scope="module")
def swapped(tiny_llama):
    """vLLM's list echo with each choice carrying another prompt's ``index`` (the last
    prompt's echo as index 0, …); one prompt a request is echoed right."""
    s = ModelServer(tiny_llama, list_fault="swapped")
    yield s
    s.stop()


def test_a_list_echo_whose_choices_carry_each_others_index_fails(swapped, hf):
    """Issue 63 item 2: options A and B came back under each other's ``index`` and were read
    as given (A's log-prob was B's). Each option's echo must be its own prompt's tokens (the
    context + option tokenised together by the server, never the option alone: a SentencePiece
    tokenizer may split it otherwise after the context), so the question fails with the
    reason."""
    backend = OpenAIBackend("tiny", base_url=swapped.url, scoring="echo", max_retries=0)
    request = ScoreNext(PROMPT, ("A", "B"), echo=True)
    (got,) = backend.run([request])
    (want,) = hf.run([request])
    assert want.logprobs["A"] != pytest.approx(want.logprobs["B"], abs=TOL)  # it would show
    assert isinstance(got, Failed), got
    assert "the echo of option 'B''s prompt as option 'A''s" in got.error


def test_each_option_is_checked_against_its_prompt_tokenised_in_context(capped, hf):
    """The check asks the server's /tokenize for each option's whole prompt: an option that
    tokenises otherwise after the context (here "A" after "：" and " B" after a space moved to
    it) still reads as hf: does."""
    backend = OpenAIBackend("tiny", base_url=capped.url, scoring="echo")
    requests = [ScoreNext(PROMPT, ("A", "B"), echo=True),
                ScoreNext(PROMPT + " ", ("A", "B"), echo=True)]
    for got, want in zip(backend.run(requests), hf.run(requests), strict=True):
        assert got.scoring == "echo" and got.logprobs == pytest.approx(want.logprobs, abs=TOL)


@pytest.mark.parametrize(("fault", "reason", "not_this"), [
    ("short", "is not the tokens the server's /tokenize gives for it", "share a first token"),
    ("bos", "a BOS the echo drops", "merges with the prompt's last token")])
def test_list_echo_failures_name_their_reason(tiny_llama, fault, reason, not_this):
    """Issue 63 Messages: on the list path a /tokenize that disagrees with the echo (short, or
    with a BOS the echo lacks) was named "share a first token" or "merges with the prompt's
    last token"; it is named for what it is."""
    server = ModelServer(tiny_llama, tokenize_fault=fault)
    try:
        backend = OpenAIBackend("tiny", base_url=server.url, scoring="echo", max_retries=0)
        (got,) = backend.run([ScoreNext(PROMPT, ("A", "B"), echo=True)])
    finally:
        server.stop()
    assert isinstance(got, Failed), got
    assert reason in got.error and not_this not in got.error, got.error


@pytest.fixture(scope="module")
def list_after(tiny_llama):
    """vLLM's list echo misaligned by one position (each log-prob read from the distribution
    after its token); one prompt a request is echoed right."""
    s = ModelServer(tiny_llama, list_fault="after")
    yield s
    s.stop()


def test_the_probe_echoes_a_list_where_scoring_sends_lists(list_after, hf):
    """Issue 63 item 3: the probe echoed single prompts only, which this server reads right,
    while scoring on vLLM sends the options as one list, which it misreads: the misread list
    was scored. The probe now sends its echoes the way scoring will, and the question fails
    with the probe's reason."""
    backend = OpenAIBackend("tiny", base_url=list_after.url, scoring="echo", max_retries=0)
    request = ScoreNext(PROMPT, ("A", "B"), echo=True)
    (got,) = backend.run([request])
    assert isinstance(got, Failed), got
    assert "the server's echo does not read a token's log-prob where its top log-probs do" \
        in got.error and "use --scoring top-k" in got.error
    # --batch sends one prompt a request, which this server echoes right: probed so, scored
    single = OpenAIBackend("tiny", base_url=list_after.url, scoring="echo", max_retries=0,
                           batch=True)
    assert single._echo_refused([request]) is None


def _ignoring_echo(path, body):
    """A server that ignores ``echo``: every completions request is answered with its next
    token alone, "A" first and "x" second (no other option among its top log-probs)."""
    top = {"A": -0.4, "x": -1.2, " y": -2.0, "z": -2.5, "w": -3.0}
    k = body.get("logprobs") or 0
    return json.dumps({"choices": [{"index": 0, "text": "A", "logprobs": {
        "tokens": ["A"], "token_logprobs": [-0.4],
        "top_logprobs": [dict(list(top.items())[:k])]}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 1}}).encode()


def test_an_echo_probe_that_proves_nothing_falls_back_to_top_k_and_says_so(tmp_path, capsys):
    """Issue 63 item 4: a server that ignores ``echo`` answers the probe with nothing it can
    check; that was taken as "echo works", so --scoring auto redid every question in echo and
    failed them all. Cannot tell is not "works": the top-k answers stand (an option outside
    them is less likely than all of them, as --scoring top-k reads it), said on the console
    and in results.json's warnings."""
    from localeval.demo.mcq import SAMPLE_MCQ

    with ScriptedServer(_ignoring_echo) as server:
        run = evaluate(task="tmlu", model="openai:m", data=str(SAMPLE_MCQ), shots=0,
                       output=tmp_path / "run", quiet=True, store=False,
                       backend_options={"base_url": server.url, "max_retries": 0,
                                        "top_logprobs": 2})
    assert run.results["n_failed"] == 0, run.samples[0]["error"]
    assert all(s["pred"] == "A" for s in run.samples)
    note = "could not be checked"
    assert any(note in w for w in run.results.warnings), run.results.warnings
    assert note in capsys.readouterr().err


def test_a_top_k_run_records_an_option_outside_the_top_k(tmp_path):
    """--scoring top-k on a server whose top log-probs hold "A" alone: each option outside them
    is less likely than all of them (null in samples.jsonl), not a validation traceback of
    the sample record (found with the fallback above)."""
    from localeval.demo.mcq import SAMPLE_MCQ

    with ScriptedServer(_ignoring_echo) as server:
        run = evaluate(task="tmlu", model="openai:m", data=str(SAMPLE_MCQ), shots=0,
                       output=tmp_path / "run", quiet=True, store=False,
                       backend_options={"base_url": server.url, "max_retries": 0,
                                        "top_logprobs": 2, "scoring": "top-k"})
    assert run.results["n_failed"] == 0
    first = json.loads((tmp_path / "run" / "samples.jsonl").read_text().splitlines()[0])
    assert first["logprobs"] == {"A": -0.4, "B": None, "C": None, "D": None}
    assert first["pred"] == "A" and first["scoring"] == "top-k"
