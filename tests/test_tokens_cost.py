"""Tokens per model role, their cost at --price, and --max-tokens-total / --max-spend stopping a
run cleanly and resumably (issue 38 item 4). A loopback server reports OpenAI's ``usage``
(prompt, completion and provider-cached tokens) on every reply; no model is built."""

from __future__ import annotations

import json

import pytest
from scripted_server import ScriptedServer

from localeval import evaluate
from localeval.api import write_report
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
