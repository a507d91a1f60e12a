"""Issue 47, items 1-5: the shape of a reply is checked before any value of it is read. A JSON
object that repeats a name, a chat top-k that names a candidate twice, a null log-prob, two
``choices`` for one prompt (or one with another ``index``), a reply without its generated text,
and an ``hf:`` model whose logits are NaN each fail the request with the reason, where main
scored them with exit 0. Loopback servers with hand-written replies (tests/scripted_server.py);
the last test builds a tiny model."""

from __future__ import annotations

import json
import sqlite3

import pytest
from scripted_server import ScriptedServer
from tiny_models import make_model

from localeval import evaluate
from localeval.backends.base import Failed, Generate, NextLogprobs, ScoreNext
from localeval.backends.openai_compat import OpenAIBackend
from localeval.cli import main
from localeval.demo.mcq import SAMPLE_MCQ

TOP = '{"A": -3.0, "B": -0.5, "C": -2.0, "D": -4.0}'  # every sample predicts B (8 of 15 right)


def _completions(top: str) -> bytes:
    return ('{"choices": [{"index": 0, "text": "B", "logprobs": {"top_logprobs": [' + top
            + ']}}]}').encode()


def _entry(token: str, logprob: float | None, utf8: bytes | None = None) -> dict:
    return {"token": token, "logprob": logprob, "bytes": list(utf8 or token.encode())}


HONEST = [_entry("B", -0.5), _entry("C", -2.0), _entry("A", -3.0), _entry("D", -4.0)]


def _chat(top: list[dict], content: str | None = "B") -> bytes:
    return json.dumps({"choices": [{
        "index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": content},
        "logprobs": {"content": [dict(_entry(content or "", -0.5), top_logprobs=top)]}}]}
    ).encode()


def _run(reply: bytes, tmp_path, *more: str) -> tuple[int, dict, list[dict]]:
    """The command line's exit status, results and samples of a TMLU run on ``reply``."""
    with ScriptedServer(lambda path, body: reply) as server:
        code = main(["run", "--task", "tmlu", "--model", "openai:m", "--data", str(SAMPLE_MCQ),
                     "--shots", "0", "--base-url", server.url, "--max-retries", "0",
                     "--output", str(tmp_path / "run"), "--cache", str(tmp_path / "c.sqlite"),
                     "--quiet", "--no-store", *more])
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    samples = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").open()]
    return code, results, samples


def _all_failed(run: tuple[int, dict, list[dict]], reason: str, tmp_path) -> None:
    code, results, samples = run
    assert code == 3 and results["metrics"]["micro"]["n"] == 0
    assert results["metrics"]["micro"]["n_failed"] == 15
    for s in samples:
        assert s["pred"] is None and reason in s["error"], s
    with sqlite3.connect(tmp_path / "c.sqlite") as db:  # nothing of it was cached
        assert db.execute("SELECT COUNT(*) FROM responses").fetchone() == (0,)


LIKELIHOOD = ("--method", "likelihood")


def test_the_honest_replies_still_score(tmp_path):
    for k, (reply, more) in enumerate([(_completions(TOP), LIKELIHOOD),
                                       (_chat(HONEST), (*LIKELIHOOD, "--chat", "single")),
                                       (_completions(TOP), ("--method", "generation")),
                                       (_chat(HONEST), ("--method", "generation", "--chat",
                                                        "single"))]):
        code, results, samples = _run(reply, tmp_path / str(k), *more)
        assert code == 0 and {s["pred"] for s in samples} == {"B"}
        assert results["metrics"]["micro"]["correct"] == 8


def test_a_json_object_that_repeats_a_name_is_refused(tmp_path):
    """Before: Python's json kept the last "B" (-50.5), every sample predicted C: 4/15 with
    exit 0 where the honest server gives 8/15."""
    repeated = TOP[:-1] + ', "B": -50.5}'
    _all_failed(_run(_completions(repeated), tmp_path, *LIKELIHOOD),
                "a JSON object repeats the name 'B'", tmp_path)


def test_a_chat_top_k_that_names_a_candidate_twice_is_ambiguous(tmp_path):
    """Before: the last "B" entry (-50.5) won, every sample predicted C: 4/15 with exit 0."""
    _all_failed(_run(_chat([*HONEST, _entry("B", -50.5)]), tmp_path, *LIKELIHOOD,
                     "--chat", "single"),
                "top log-probs name 2 tokens 'B' (-0.5, -50.5, the same bytes)", tmp_path)


def test_two_tokens_of_one_text_are_told_apart_by_their_bytes(tmp_path):
    """SentencePiece's "▁B" decoded alone reads "B" too: its bytes say which is the token "B".
    Before: the last entry ("▁B", -50.5) won and every sample predicted C."""
    code, _, samples = _run(_chat([*HONEST, _entry("B", -50.5, "▁B".encode())]), tmp_path,
                            *LIKELIHOOD, "--chat", "single")
    assert code == 0 and {s["pred"] for s in samples} == {"B"}
    assert samples[0]["logprobs"]["B"] == -0.5


def test_a_guard_label_named_twice_fails_instead_of_scoring(tmp_path):
    """A guard's ranked labels (ScoreNext.top) on a chat server: before, the last "unsafe"
    (-50) won, and P(unsafe) was 0.0 ("unsafe" outside the top 2)."""
    top = [_entry("unsafe", -0.1), _entry("safe", -2.5), _entry("unsafe", -50.0)]
    replies = {"top": top}
    request = ScoreNext([{"role": "user", "content": "hi"}], ("unsafe", "safe"), top=2)
    with ScriptedServer(lambda path, body: _chat(replies["top"], "unsafe")) as server:
        backend = OpenAIBackend("m", base_url=server.url, max_retries=0)
        (out,) = backend.run([request])
        replies["top"] = top[:2]  # the honest server
        (honest,) = backend.run([request])
    assert isinstance(out, Failed) and "name 2 tokens 'unsafe'" in out.error
    assert out.reason.permanent
    assert isinstance(honest, NextLogprobs) and honest.ranks == {"unsafe": 1, "safe": 2}


@pytest.mark.parametrize("reply, more", [
    (_completions('{"A": -3.0, "B": null, "C": -2.0, "D": -4.0}'), ("--scoring", "top-k")),
    (_completions('{"A": -3.0, "B": null, "C": -2.0, "D": -4.0}'), ()),  # auto: not echoed
    (_chat([_entry("B", None), *HONEST[1:]]), ("--chat", "single")),
])
def test_a_null_log_prob_is_not_outside_the_top_k(reply, more, tmp_path):
    """Before: "B": null read as "B is outside the top-k", so C won: 4/15 with exit 0 (in
    auto, the question was redone in echo, which this server does not answer)."""
    _all_failed(_run(reply, tmp_path, *LIKELIHOOD, *more), "the log-prob of 'B' is null",
                tmp_path)


WRONG = '{"A": -3.0, "B": -2.0, "C": -0.5, "D": -4.0}'


@pytest.mark.parametrize("reply, reason", [
    ('{"choices": [{"index": 1, "text": "C", "logprobs": {"top_logprobs": [' + WRONG + ']}}, '
     '{"index": 0, "text": "B", "logprobs": {"top_logprobs": [' + TOP + ']}}]}',
     "choices has 2 entries for one prompt"),
    ('{"choices": [{"index": 1, "text": "C", "logprobs": {"top_logprobs": [' + WRONG + ']}}]}',
     "choices[0].index is 1 for the only prompt"),
])
def test_choices_are_one_per_prompt_with_its_index(reply, reason, tmp_path):
    """Before: choices[0] was read whatever its index and however many came: C, 4/15, exit 0."""
    _all_failed(_run(reply.encode(), tmp_path, *LIKELIHOOD), reason, tmp_path)


@pytest.mark.parametrize("reply, more, reason", [
    (b'{"choices": [{"index": 0, "finish_reason": "stop"}]}', (),
     "choices[0].text is missing, not text"),
    (b'{"choices": [{"index": 0, "text": null}]}', (), "choices[0].text is null, not text"),
    (_chat([], None), ("--chat", "single"), "choices[0].message.content is null, not text"),
    (b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": null, '
     b'"refusal": "I cannot help"}}]}', ("--chat", "single"),
     "content is null; the server refused: 'I cannot help'"),
])
def test_a_reply_without_its_text_is_a_failure_not_an_empty_answer(reply, more, reason,
                                                                   tmp_path):
    """Before: scored as an empty answer ("no letter A-F", counted wrong): 0/15 with exit 0."""
    _all_failed(_run(reply, tmp_path, "--method", "generation", *more), reason, tmp_path)


@pytest.fixture(scope="module")
def nan_model(tmp_path_factory):
    """A tiny llama whose final norm is NaN, so every logit is; and the same model with a
    repetition penalty, which generation runs one prompt at a time (model.generate)."""
    import torch
    import transformers

    root = tmp_path_factory.mktemp("nan")
    source = make_model(root / "llama", arch="llama", layers=2, tied=False)
    model = transformers.AutoModelForCausalLM.from_pretrained(source)
    with torch.no_grad():
        model.model.norm.weight.fill_(float("nan"))
    folders = {}
    for name, penalty in (("batched", None), ("one-at-a-time", 1.1)):
        if penalty:
            model.generation_config.repetition_penalty = penalty
        model.save_pretrained(root / name)
        transformers.AutoTokenizer.from_pretrained(source).save_pretrained(root / name)
        folders[name] = root / name
    return folders


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["batched", "one-at-a-time"])
def test_generation_on_nan_logits_fails_each_question(nan_model, layout, tmp_path):
    """Before: argmax over NaN picked token 0 (a special token), decoded as '': 0/15 with exit
    0, where likelihood failed each question."""
    record = evaluate(task="tmlu", model=f"hf:{nan_model[layout]}", data=str(SAMPLE_MCQ),
                      method="generation", shots=0, max_tokens=4, quiet=True, store=False,
                      output=tmp_path / "run")
    assert record.results["metrics"]["micro"]["n"] == 0
    assert record.results["request_failures"] == {"transient": 0, "permanent": 15}
    for s in record.samples:
        assert "logits are NaN at generated token 1" in s["error"], s


@pytest.mark.slow
def test_a_draw_on_nan_logits_fails_too(nan_model):
    """A sampled draw: before, torch.multinomial raised on the NaN probabilities."""
    from localeval.backends.hf import HFBackend

    backend = HFBackend(str(nan_model["batched"]))
    out = backend.run([Generate("Hello", max_tokens=3, sample=1), Generate("Hi", max_tokens=3)])
    assert all(isinstance(r, Failed) and "logits are NaN" in r.error for r in out), out
