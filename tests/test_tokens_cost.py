"""Tokens per model role, their cost at --price, and --max-tokens-total / --max-spend stopping a
run cleanly and resumably (issue 38 item 4). A loopback server reports OpenAI's ``usage``
(prompt, completion and provider-cached tokens) on every reply; no model is built."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest
from scripted_server import ScriptedServer, TokenizingServer

from localeval import evaluate
from localeval.api import write_report
from localeval.backends.echo_scoring import PROBE_TOP
from localeval.cli import main
from localeval.demo.mcq import SAMPLE_MCQ
from localeval.store.usage import Budget, BudgetReached

USAGE = {"prompt_tokens": 100, "completion_tokens": 3,
         "prompt_tokens_details": {"cached_tokens": 64}}


def _reply(usage=USAGE):
    def reply(path, body):
        return json.dumps({"choices": [{"index": 0, "text": "B"}], "usage": usage}).encode()
    return reply


def _run(url, tmp_path, budget=None, name="run"):
    return evaluate(task="tmlu", model="openai:m", data=str(SAMPLE_MCQ), method="generation",
                    shots=0, output=tmp_path / name, cache=tmp_path / "cache.sqlite",
                    quiet=True, store=False, budget=budget,
                    backend_options={"base_url": url, "max_retries": 0})


def test_tokens_are_counted_per_role_and_named_apart_and_priced(tmp_path):
    price = Budget(price_in=2.0, price_out=10.0)
    with ScriptedServer(_reply()) as server:
        first = _run(server.url, tmp_path, price)
        n = len(server.posts)
        again = _run(server.url, tmp_path, price)  # every answer from our cache
        assert len(server.posts) == n
    u = first.results.usage["model"]
    assert (u.requests_run, u.cache_hits) == (n, 0)
    assert (u.prompt_tokens, u.completion_tokens, u.provider_cached_tokens) == \
        (100 * n, 3 * n, 64 * n)
    assert (u.sent_prompt_tokens, u.sent_completion_tokens) == (100 * n, 3 * n)
    assert first.results.cost.total == pytest.approx((200 * n + 30 * n) / 1e6)
    assert first.results.cost.spent == first.results.cost.total
    v = again.results.usage["model"]
    assert (v.requests_run, v.cache_hits, v.prompt_tokens, v.sent_prompt_tokens) == \
        (0, n, 100 * n, 0)  # the answers' counts are kept; nothing was sent
    assert again.results.cost.spent == 0
    assert again.results.cost.total == first.results.cost.total
    stored = json.loads((tmp_path / "run" / "results.json").read_text())
    assert stored["usage"]["model"]["provider_cached_tokens"] == 64 * n
    html = write_report([tmp_path / "run"]).read_text(encoding="utf-8")
    assert "cost of the model" in html and "provider_cached_tokens" in html


def test_a_usage_count_that_is_not_one_fails_the_request(tmp_path):
    with ScriptedServer(_reply({"prompt_tokens": 100, "completion_tokens": "3"})) as server:
        record = _run(server.url, tmp_path)
    assert record.results.n_failed == record.results.n_samples
    assert "usage.completion_tokens is '3', not a count of tokens" in record.samples[0]["error"]


def test_a_token_budget_stops_the_run_and_the_same_command_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr("localeval.store.executor.BUDGET_CHUNK", 4)
    with ScriptedServer(_reply()) as server:
        with pytest.raises(BudgetReached, match="412 tokens sent, --max-tokens-total 250"):
            _run(server.url, tmp_path, Budget(max_tokens=250))
        assert len(server.posts) == 4  # one backend call of 4, then the check stopped it
        config = json.loads((tmp_path / "run" / "config.json").read_text())
        assert config["run"]["status"] == "failed"
        assert config["run"]["error"].startswith("BudgetReached: budget reached")
        resumed = _run(server.url, tmp_path)
    assert resumed.results.usage["model"].cache_hits == 4
    assert resumed.results.usage["model"].requests_run == resumed.results.n_samples - 4


def test_the_budget_flags_on_the_command_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("localeval.store.executor.BUDGET_CHUNK", 4)
    with ScriptedServer(_reply()) as server:
        base = ["run", "--task", "tmlu", "--data", str(SAMPLE_MCQ), "--model", "openai:m",
                "--base-url", server.url, "--method", "generation", "--shots", "0",
                "--output", str(tmp_path / "run"), "--no-store", "--quiet", "--no-report"]
        assert main([*base, "--price", "in=1,out=2", "--max-spend", "0.0001"]) == 4
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "budget reached: 0.0004 spent, --max-spend 0.0001" in err[0]
        assert main([*base, "--price", "in=1,out=2", "--json"]) == 0
        results = json.loads(capsys.readouterr().out)
    assert results["cost"]["total"] == pytest.approx(results["n_samples"] * (100 + 6) / 1e6)
    assert main([*base, "--max-spend", "1"]) == 2
    assert "--max-spend needs --price" in capsys.readouterr().err
    assert main([*base, "--price", "in=abc"]) == 2
    assert "--price in='abc': expected a finite number" in capsys.readouterr().err
    assert main([*base, "--price", "input=1"]) == 2
    assert "--price takes in=… and out=…" in capsys.readouterr().err


# ---------------------------------------------------------------- issue 47 item 9: money
def _tokens(text: str) -> list[str]:
    """The loopback server's tokenizer: each non-space character with the spaces before it."""
    return re.findall(r"\s*\S|\s+$", text)


def _likelihood_reply(path, body):
    """A completions server for likelihood: its top-k holds B alone (so auto redoes each
    question in echo), its echo splits text as :func:`_tokens`; every reply carries usage. The
    echo probe's first request (PROBE_TOP log-probs) sees no top tokens: it proves nothing."""
    if body.get("logprobs") == PROBE_TOP:
        return json.dumps({"choices": [{"index": 0, "text": "x", "logprobs": None}]}).encode()
    if body.get("echo"):
        tokens = [*_tokens(body["prompt"]), "x"]
        return json.dumps({"choices": [{"index": 0, "text": "x", "logprobs": {
            "tokens": tokens, "token_logprobs": [None] + [-0.5] * (len(tokens) - 1)}}],
            "usage": {"prompt_tokens": len(tokens) - 1, "completion_tokens": 1}}).encode()
    return json.dumps({"choices": [{"index": 0, "text": "B", "logprobs": {
        "top_logprobs": [{"B": -0.1}]}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 1}}).encode()


def _paid(posts) -> tuple[int, int]:
    """The prompt and completion tokens of the run's requests (the echo probe left out)."""
    prompt = sum(len(_tokens(b["prompt"])) if b.get("echo") else 100
                 for _, b in posts if b.get("logprobs") != PROBE_TOP)
    return prompt, sum(1 for _, b in posts if b.get("logprobs") != PROBE_TOP)


@pytest.mark.parametrize("scoring", ["auto", "echo"])
def test_echo_and_top_k_replies_usage_is_counted(scoring, tmp_path):
    """Before: a likelihood run whose questions were echoed cost 0.0000 (the echo replies' usage
    was read only to line up tokens, and the top-k reply auto redid was dropped)."""
    with ScriptedServer(_likelihood_reply) as server:
        record = evaluate(task="tmlu", model="openai:m", data=str(SAMPLE_MCQ),
                          method="likelihood", shots=0, output=tmp_path / "run",
                          cache=tmp_path / "cache.sqlite", quiet=True, store=False,
                          budget=Budget(price_in=1.0, price_out=2.0),
                          backend_options={"base_url": server.url, "max_retries": 0,
                                           "scoring": scoring})
        prompt, completion = _paid(server.posts)
    assert record.results.n_failed == 0
    u = record.results.usage["model"]
    assert u.uncounted == 0
    assert (u.sent_prompt_tokens, u.sent_completion_tokens) == (prompt, completion)
    assert record.results.cost.total == pytest.approx((prompt + 2 * completion) / 1e6)
    assert record.results.cost.total > 0


def _no_usage(path, body):
    return json.dumps({"choices": [{"index": 0, "text": "B"}]}).encode()


def _cli(url, tmp_path, *more):
    return main(["run", "--task", "tmlu", "--data", str(SAMPLE_MCQ), "--model", "openai:m",
                 "--base-url", url, "--method", "generation", "--shots", "0",
                 "--output", str(tmp_path / "run"), "--no-store", "--quiet", "--no-report",
                 *more])


def test_a_cap_that_cannot_be_counted_stops_the_run_and_the_cost_says_uncounted(
        tmp_path, monkeypatch, capsys):
    """Before: a server without usage printed "cost: 0.0000" and --max-spend 0.001 never
    stopped the run (only ``"uncounted": 15`` in results.json said so)."""
    monkeypatch.setattr("localeval.store.executor.BUDGET_CHUNK", 4)
    with ScriptedServer(_no_usage) as server:
        assert _cli(server.url, tmp_path, "--price", "in=1,out=2", "--max-spend", "0.001") == 4
        err = capsys.readouterr().err.strip().splitlines()
        assert len(server.posts) == 4  # the first backend call, then the check stopped it
        assert len(err) == 1 and "--max-spend 0.001 cannot be enforced" in err[0], err
        assert "--tokenizer" in err[0] and "usage" in err[0]
        config = json.loads((tmp_path / "run" / "config.json").read_text())
        assert config["run"]["status"] == "failed"
        assert _cli(server.url, tmp_path, "--price", "in=1,out=2") == 0  # goes on, uncapped
        assert len(server.posts) == 15
    err = capsys.readouterr().err
    assert "cost: 0.0000" in err and "15 requests uncounted" in err, err


def test_a_server_without_usage_is_counted_with_its_tokenize_or_the_local_tokenizer(
        tmp_path, tiny_llama):
    """The served tokenizer (vLLM's /tokenize) counts what the server did not, else the one
    named by --tokenizer; a cap is then enforced."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_llama))
    with TokenizingServer(_no_usage, tok) as server:
        record = _run(server.url, tmp_path, Budget(price_in=1.0, price_out=2.0, max_spend=1.0))
        prompts = [b["prompt"] for p, b in server.posts if p == "/v1/completions"]
    u = record.results.usage["model"]
    assert u.uncounted == 0 and u.requests_run == 15
    assert u.sent_prompt_tokens == sum(len(tok(p)["input_ids"]) for p in prompts)
    assert u.sent_completion_tokens == 15 * len(tok("B", add_special_tokens=False)["input_ids"])
    with ScriptedServer(_no_usage) as server:
        local = evaluate(task="tmlu", model="openai:m", data=str(SAMPLE_MCQ),
                         method="generation", shots=0, output=tmp_path / "local",
                         quiet=True, store=False, budget=Budget(max_tokens=10**6),
                         backend_options={"base_url": server.url, "max_retries": 0,
                                          "tokenizer": str(tiny_llama)})
    assert local.results.usage["model"].uncounted == 0
    assert local.results.usage["model"].sent_prompt_tokens == u.sent_prompt_tokens


@pytest.mark.parametrize("models", [None, b'{"data": [{"id": "m"}]}'],
                         ids=["context", "no-context"])
@pytest.mark.parametrize("count", [10**30, 10**400], ids=["1e30", "1e400"])
def test_a_token_count_beyond_the_context_is_a_failed_request(count, models, tmp_path):
    """Before: usage.prompt_tokens 10**30 priced at 1.2e25; 10**400 an OverflowError, cached,
    so every rerun crashed and the run stayed "running". Now the request fails with the reason
    (beyond the model's context where /models gives it, else beyond a fixed bound), is not
    cached, and a rerun runs."""
    usage = {"prompt_tokens": count, "completion_tokens": 1}
    limit = "the model's context of 4096 tokens" if models is None else "10**8 tokens"
    with ScriptedServer(_reply(usage), models) as server:
        for name in ("run", "again"):
            record = _run(server.url, tmp_path, Budget(price_in=1.0, price_out=2.0), name)
            assert record.results.n_failed == record.results.n_samples
            assert f"usage.prompt_tokens is {'10**' + str(len(str(count)) - 1)}, beyond " \
                f"{limit}" in record.samples[0]["error"], record.samples[0]["error"]
            assert record.results.cost.total == 0
        assert len(server.posts) == 2 * record.results.n_samples  # nothing was cached


def test_an_answer_cached_with_an_impossible_count_is_recomputed(tmp_path):
    """Before the check a reply with usage.prompt_tokens 10**400 was cached, and every rerun
    crashed on it (OverflowError while pricing, the run left "running"): such an entry is now
    read as missing and asked again."""
    with ScriptedServer(_reply()) as server:
        _run(server.url, tmp_path)
        with sqlite3.connect(tmp_path / "cache.sqlite") as db:
            rows = db.execute("SELECT key, body FROM responses").fetchall()
            db.executemany("UPDATE responses SET body = ? WHERE key = ?", [
                (body.replace('"n_prompt_tokens": 100', f'"n_prompt_tokens": {10**400}'), key)
                for key, body in rows])
            assert all(str(10**400) in b for (b,) in db.execute("SELECT body FROM responses"))
        asked = len(server.posts)
        again = _run(server.url, tmp_path, Budget(price_in=1.0, price_out=2.0), "again")
    assert len(server.posts) - asked == len(rows)
    assert again.results.usage["model"].sent_prompt_tokens == 100 * len(rows)
