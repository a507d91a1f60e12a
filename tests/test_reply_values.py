"""Issue 32, items 1 and 2: every value read from a server's reply is checked before it is used
or cached. A NaN, infinite, non-numeric or positive log-prob, a wrong shape or a missing field
is a failed request with its reason, never an answer; nothing invalid enters the request cache,
and an invalid entry already there is recomputed. Loopback servers with hand-written replies
(tests/scripted_server.py); no model is built."""

from __future__ import annotations

import json
import sqlite3

import pytest
from scripted_server import ScriptedServer, top_logprobs_reply

from localeval import evaluate
from localeval.backends.base import (
    Embed,
    Embedding,
    Failed,
    Generate,
    Generated,
    NextLogprobs,
    ScoreNext,
    TextLogprobs,
    TokenLogprobs,
    error_of,
)
from localeval.demo.mcq import SAMPLE_MCQ
from localeval.store.cache import RequestCache
from localeval.store.executor import CachedExecutor

GOOD = {"A": -3.0, "B": -0.5, "C": -2.0, "D": -4.0}  # every sample predicts B


def strict_json(line: str):
    """json.loads that refuses NaN and Infinity, as every JSON reader but Python's does."""
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")
    return json.loads(line, parse_constant=refuse)


def _run(url, tmp_path, name="run", **more):
    return evaluate(task="tmlu", model="openai:m", data=str(SAMPLE_MCQ), method="likelihood",
                    shots=0, output=tmp_path / name, cache=tmp_path / "cache.sqlite",
                    quiet=True, store=False,
                    backend_options={"base_url": url, "max_retries": 0, **more})


@pytest.mark.parametrize("top, reason", [
    ('{"A": NaN, "B": -1, "C": -2, "D": -3}', "the log-prob of 'A': nan is not finite"),
    ('{"A": -Infinity, "B": -Infinity, "C": -Infinity, "D": -Infinity}', "-inf is not finite"),
    ('{"A": true, "B": -1, "C": -2, "D": -3}', "the log-prob of 'A': True is not a number"),
    ('{"A": "-1", "B": -2, "C": -3, "D": -4}', "the log-prob of 'A': '-1' is not a number"),
    ('{"A": 0.5, "B": -1, "C": -2, "D": -3}', "0.5 is positive"),
    ('5', "malformed reply"),  # a number for the top log-probs: the wrong shape
])
def test_an_invalid_log_prob_is_a_failed_request_never_an_answer(top, reason, tmp_path):
    """Before: NaN for A made every sample predict A (accuracy 2/15), as did four -Infinity and
    ``true``; "-1" was a TypeError traceback; samples.jsonl held a bare NaN."""
    with ScriptedServer(lambda path, body: top_logprobs_reply(top)) as server:
        record = _run(server.url, tmp_path)
    assert record.results["metrics"]["micro"]["n"] == 0
    assert record.results["request_failures"] == {"transient": 0, "permanent": 15}
    for s in record.samples:
        assert s["pred"] is None and reason in s["error"], s
    for line in (tmp_path / "run" / "samples.jsonl").read_text(encoding="utf-8").splitlines():
        strict_json(line)
    with sqlite3.connect(tmp_path / "cache.sqlite") as db:  # nothing of it was cached
        assert db.execute("SELECT COUNT(*) FROM responses").fetchone() == (0,)


def test_a_malformed_reply_is_not_cached_and_a_fixed_server_is_read(tmp_path):
    """Before: {"A": "-1"} was cached, so every rerun crashed the same way (TypeError '>' not
    supported between 'int' and 'str') even after the server was fixed."""
    reply = {"top": '{"A": "-1", "B": -2, "C": -3, "D": -4}'}
    with ScriptedServer(lambda path, body: top_logprobs_reply(reply["top"])) as server:
        first = _run(server.url, tmp_path)
        reply["top"] = json.dumps(GOOD)  # the server is fixed
        again = _run(server.url, tmp_path)
    assert first.results["metrics"]["micro"]["n_failed"] == 15
    assert again.results["metrics"]["micro"]["n"] == 15
    assert {s["pred"] for s in again.samples} == {"B"}


def test_an_invalid_entry_already_in_the_cache_is_recomputed(tmp_path):
    """A cache written before the check (or damaged) holds {"A": "-1"}: it is treated as missing,
    asked again and replaced, not read back into a crash."""
    with ScriptedServer(lambda path, body: top_logprobs_reply(GOOD)) as server:
        clean = _run(server.url, tmp_path, "clean")
        identity = clean.config["backend"]
        with sqlite3.connect(tmp_path / "cache.sqlite") as db:
            keys = [k for (k,) in db.execute("SELECT key FROM responses")]
            bad = json.dumps({"logprobs": {"A": "-1", "B": -2, "C": -3, "D": -4}})
            db.executemany("UPDATE responses SET body = ? WHERE key = ?", [(bad, k) for k in keys])
            db.execute("UPDATE responses SET body = 'not json' WHERE key = ?", (keys[0],))
        asked = len(server.posts)
        again = _run(server.url, tmp_path, "again")
    assert len(server.posts) - asked == 15 and again.results["timing"]["requests_run"] == 15
    assert again.results["metrics"]["micro"]["n"] == 15
    assert [s["pred"] for s in again.samples] == [s["pred"] for s in clean.samples]
    with RequestCache(tmp_path / "cache.sqlite") as cache:
        request = ScoreNext("x", ("A", "B"))
        assert cache.get_many(identity, [request]) == [None]


def _echo_reply(values: str, n_prompt: int = 5):
    return lambda path, body: ('{"choices": [{"index": 0, "text": "x", "logprobs": '
                               '{"token_logprobs": ' + values + '}}], "usage": '
                               '{"prompt_tokens": ' + str(n_prompt) + '}}').encode()


@pytest.mark.parametrize("values, n_prompt, reason", [
    ("[null, -1.0, NaN, -3.0, -2.0, -0.5]", 5, "token log-probs[1]: nan is not finite"),
    ("[null, -1.0, true, -3.0, -2.0, -0.5]", 5, "token log-probs[1]: True is not a number"),
    ('[null, -1.0, "-2", -3.0, -2.0, -0.5]', 5, "'-2' is not a number"),
    ("[null, -1.0, 2.0, -3.0, -2.0, -0.5]", 5, "is positive"),
    ("[null, -1.0, -2.0, -3.0, -2.0, -0.5]", "\"5\"", "usage.prompt_tokens is '5'"),
])
def test_contamination_token_log_probs_are_checked(values, n_prompt, reason, tmp_path):
    """Before: a NaN token log-prob made Min-K%[10] -1.0 where the lowest value is -3.0."""
    texts = tmp_path / "texts.jsonl"
    texts.write_text("".join(json.dumps({"id": f"t{i}", "text": f"text number {i}"}) + "\n"
                             for i in range(3)))
    with ScriptedServer(_echo_reply(values, n_prompt)) as server:
        record = evaluate(task="contamination", data=[str(texts)], model="openai:m",
                          k=[10.0], quiet=True, store=False, output=tmp_path / "run",
                          backend_options={"base_url": server.url, "max_retries": 0})
    assert len(record.samples) == 3
    for s in record.samples:
        assert reason in s["error"], s
    for line in (tmp_path / "run" / "samples.jsonl").read_text(encoding="utf-8").splitlines():
        strict_json(line)


def test_valid_token_log_probs_still_score(tmp_path):
    texts = tmp_path / "texts.jsonl"
    texts.write_text(json.dumps({"id": "t", "text": "a text"}) + "\n")
    with ScriptedServer(_echo_reply("[null, -1.0, -3.0, -2.0, -0.5, -0.1]")) as server:
        record = evaluate(task="contamination", data=[str(texts)], model="openai:m",
                          k=[10.0], quiet=True, store=False,
                          backend_options={"base_url": server.url})
    (sample,) = record.samples
    assert "error" not in sample and sample["min_k"]["10"] == -3.0


@pytest.mark.parametrize("scores, reason", [
    ('{"violence": NaN, "hate": 0.1}', "nan is not finite"),
    ('{"violence": "0.9", "hate": "0.1"}', "'0.9' is not a number"),
    ('{"violence": true}', "True is not a number"),
    ('{"violence": 7}', "7 is above 1"),
    # issue 47 item 7: after a valid score, max() skipped the NaN and scored 0.1
    ('{"hate": 0.1, "violence": NaN}', "category 'violence': nan is not finite"),
    ('{"hate": 0.1, "violence": -0.5}', "category 'violence': -0.5 is below 0"),
    ('{"hate": 0.1, "violence": Infinity}', "category 'violence': inf is not finite"),
])
def test_a_guard_score_that_is_not_a_probability_is_a_failure(scores, reason, tmp_path,
                                                              monkeypatch):
    reply = ('{"results": [{"flagged": false, "category_scores": ' + scores + '}]}').encode()
    sample = _moderated(reply, "openai-moderation", {"OPENAI_BASE_URL": ""}, tmp_path,
                        monkeypatch)
    assert sample["score"] is None and reason in sample["error"], sample


def test_a_null_category_is_absent_and_the_others_score(tmp_path, monkeypatch):
    reply = b'{"results": [{"category_scores": {"hate": 0.1, "illicit/violent": null}}]}'
    sample = _moderated(reply, "openai-moderation", {"OPENAI_BASE_URL": ""}, tmp_path,
                        monkeypatch)
    assert sample["score"] == 0.1 and "error" not in sample, sample


@pytest.mark.parametrize("severity", ["-3", "8", "2.5", '"6"', "true"])
def test_an_azure_severity_that_is_not_a_level_is_a_failure(severity, tmp_path, monkeypatch):
    """Before: a -3 next to a 0 scored 0; "6" and 2.5 were read through int()."""
    reply = ('{"blocklistsMatch": [], "categoriesAnalysis": [{"category": "Hate", "severity": '
             '0}, {"category": "Violence", "severity": ' + severity + '}]}').encode()
    sample = _moderated(reply, "azure-content-safety", {"AZURE_CONTENT_SAFETY_ENDPOINT": ""},
                        tmp_path, monkeypatch)
    assert sample["score"] is None and "is not an integer from 0 to 7" in sample["error"]


def _moderated(reply: bytes, guard: str, endpoint: dict, tmp_path, monkeypatch) -> dict:
    """The one sample of a moderation guard run against a server answering ``reply``; each
    variable in ``endpoint`` is set to the server's URL, every key variable to "k"."""
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(json.dumps({"id": "p", "lang": "en", "prompt": "hi", "label": "safe"})
                       + "\n")
    with ScriptedServer(lambda path, body: reply) as server:
        for name in ("OPENAI_API_KEY", "AZURE_CONTENT_SAFETY_KEY"):
            monkeypatch.setenv(name, "k")
        for name in endpoint:
            monkeypatch.setenv(name, server.url)
        record = evaluate(task="safety-prompts", data=prompts, guard=guard, quiet=True,
                          n_resamples=0, store=False)
    (sample,) = record.samples
    return sample


class Vectors:
    """An embedding backend whose vectors are NaN, empty or not numbers."""

    identity = {"backend": "vectors", "model": "vectors"}

    def run(self, requests, progress=None):
        bad = ([float("nan"), 1.0], [], ["0.5", 1.0], [1.0, 2.0])
        out = [Embedding(embedding=bad[int(r.text)]) for r in requests]
        for i, r in enumerate(out):
            progress(i, r)
        return out


def test_an_invalid_embedding_is_a_failed_request_and_is_not_cached(tmp_path):
    requests = [Embed(str(i)) for i in range(4)]
    with RequestCache(tmp_path / "c.sqlite") as cache:
        out = CachedExecutor(Vectors(), cache, True, "texts")(requests)
        kept = cache.get_many(Vectors.identity, requests)
    assert [error_of(r) is None for r in out] == [False, False, False, True]
    assert "nan is not finite" in out[0].error and "empty embedding" in out[1].error
    assert "'0.5' is not a number" in out[2].error and out[0].reason.permanent
    assert [r is not None for r in kept] == [False, False, False, True]


@pytest.mark.parametrize("request_, response, problem", [
    (ScoreNext("q", ("A", "B")), NextLogprobs(logprobs={"A": -1.0}), "not for the candidates"),
    # an answer of another request kind's type
    (ScoreNext("q", ("A", "B")), Generated(text="A"),
     "a Generated answer to a ScoreNext request"),
    (Generate("q"), NextLogprobs(logprobs={"A": -1.0}),
     "a NextLogprobs answer to a Generate request"),
    # a null text (as a JSON entry may hold one)
    (Generate("q"), Generated(text=None), "no generated text"),
    (TextLogprobs("t"), TokenLogprobs(token_logprobs=[-1.0], token_means=[-1.0, -2.0]),
     "token means has 2 values for 1 tokens"),
    (TextLogprobs("t"), TokenLogprobs(token_logprobs=[-1.0], token_stds=[-0.5]), "below 0"),
])
def test_a_response_of_the_wrong_shape_is_a_failure(request_, response, problem):
    from localeval.backends.reply_checks import checked

    out = checked(request_, response)
    assert isinstance(out, Failed) and problem in out.error and out.reason.permanent


def test_a_200_with_an_error_body_stays_a_failure_a_rerun_may_fix(tmp_path):
    """A gateway's HTTP 200 with {"error": …}: retried, and if it persists a transient failure
    (a rerun may pass), where a reply of the wrong shape is a permanent one."""
    replies = {"body": b'{"error": {"message": "overloaded"}}'}
    with ScriptedServer(lambda path, body: replies["body"]) as server:
        first = _run(server.url, tmp_path, "error-body")
        replies["body"] = b'{"choices": []}'
        second = _run(server.url, tmp_path, "wrong-shape")
    assert first.results["request_failures"] == {"transient": 15, "permanent": 0}
    assert "error reply from" in first.samples[0]["error"]
    assert second.results["request_failures"] == {"transient": 0, "permanent": 15}
    assert "malformed reply" in second.samples[0]["error"]
