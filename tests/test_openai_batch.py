"""``--batch`` on ``openai:``: the run's requests as OpenAI Batch API jobs, against a loopback
server implementing the Batch routes over a real model (:mod:`batch_server`), compared with the
same requests sent directly (:mod:`openai_server`, the same model): a batch equal to the direct
run, one that fails half its rows, one that expires, and a run killed while its batch is in
flight, which re-attaches. A model-free sampling server (:class:`Sampler`) for the draws of
--repeats and an output file that answers a request twice (issue 47 item 6)."""

from __future__ import annotations

import json

import pytest
from batch_server import BatchServer
from openai_server import ModelServer

import localeval.backends.openai_batch as openai_batch
from localeval.api import evaluate
from localeval.backends.openai_compat import OpenAIBackend
from localeval.cli import main
from localeval.demo.mcq import SAMPLE_MCQ

QUESTIONS = dict(task="cmmlu", subjects=["arts"], limit=4, shots=1, quiet=True, store=False)


@pytest.fixture(scope="module")
def model_server(tiny_llama):
    s = ModelServer(tiny_llama)
    yield s
    s.stop()


@pytest.fixture
def batches(model_server, monkeypatch):
    monkeypatch.setenv("LOCALEVAL_BATCH_POLL_MAX_S", "0.02")
    s = BatchServer(model_server)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def direct(model_server, shared, tmp_path_factory):
    """The same questions sent one request each: the reference."""
    backend = OpenAIBackend("tiny", base_url=model_server.url, scoring="echo")
    return evaluate(model=backend, data=shared / "data" / "cmmlu",
                    output=tmp_path_factory.mktemp("direct") / "run", **QUESTIONS).samples


def _run(batches, shared, folder):
    backend = OpenAIBackend("tiny", base_url=batches.url, scoring="echo", batch=True)
    return evaluate(model=backend, data=shared / "data" / "cmmlu", output=folder,
                    cache=folder.parent / "cache.sqlite", **QUESTIONS)


def _same(samples, direct) -> None:
    assert [s["id"] for s in samples] == [s["id"] for s in direct]
    for a, b in zip(samples, direct, strict=True):
        assert "error" not in a, a
        assert (a["pred"], a["logprobs"]) == (b["pred"], b["logprobs"])


def _lines_sent(batches) -> list[int]:
    return [len(b["lines"]) for b in batches.batches.values()]


def test_a_batch_equals_the_direct_run(batches, shared, direct, tmp_path):
    record = _run(batches, shared, tmp_path / "run")
    _same(record.samples, direct)
    assert (batches.uploads, batches.creates) == (1, 1)  # one job: 4 questions x (1 + 4)
    assert _lines_sent(batches) == [20]
    assert record.results["timing"]["batches_submitted"] == 1
    assert json.loads((tmp_path / "run" / "batches.json").read_text()) == {"batches": []}


def test_half_the_rows_failing_are_failures_and_a_rerun_sends_only_those(batches, shared,
                                                                         direct, tmp_path):
    batches.mode = "half"
    record = _run(batches, shared, tmp_path / "run")
    failed = [s for s in record.samples if s.get("failed")]
    assert failed and record.results["n_failed"] == len(failed)
    for s in failed:
        assert "HTTP 500 in batch batch_" in s["error"] and s["pred"] is None, s
    for s in record.samples:  # the others are scored, from their rows
        if not s.get("failed"):
            assert s["logprobs"] == next(d for d in direct if d["id"] == s["id"])["logprobs"]
    batches.mode = "complete"
    _same(_run(batches, shared, tmp_path / "run").samples, direct)
    assert _lines_sent(batches) == [20, 10]  # the 10 rows of the error file, nothing else


def test_an_expired_batch_fails_what_it_did_not_run_and_a_rerun_sends_only_that(
        batches, shared, direct, tmp_path):
    batches.mode = "expire"
    record = _run(batches, shared, tmp_path / "run")
    failed = [s for s in record.samples if s.get("failed")]
    assert failed and all("expired before this request ran" in s["error"] for s in failed)
    assert len(failed) < len(record.samples)  # the first half of the rows came back
    batches.mode = "complete"
    _same(_run(batches, shared, tmp_path / "run").samples, direct)
    assert _lines_sent(batches) == [20, 10]


def test_a_run_killed_while_its_batch_is_in_flight_re_attaches(batches, shared, direct,
                                                              tmp_path, monkeypatch):
    batches.mode = "hold"
    real_sleep = openai_batch.time.sleep

    def killed(seconds):  # Ctrl-C while the client waits between polls
        raise KeyboardInterrupt

    monkeypatch.setattr(openai_batch.time, "sleep", killed)
    command = ["run", "--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"),
               "--subjects", "arts", "--limit", "4", "--shots", "1", "--quiet", "--no-store",
               "--model", "openai:tiny", "--base-url", batches.url, "--scoring", "echo",
               "--batch", "--output", str(tmp_path / "run")]
    assert main(command) == 130
    kept = json.loads((tmp_path / "run" / "batches.json").read_text())["batches"]
    assert [b["id"] for b in kept] == list(batches.batches) and len(kept[0]["custom_ids"]) == 20
    monkeypatch.setattr(openai_batch.time, "sleep", real_sleep)
    batches.mode = "complete"
    assert main(command) == 0
    assert (batches.uploads, batches.creates) == (1, 1)  # re-attached, not submitted again
    samples = [json.loads(x) for x in (tmp_path / "run" / "samples.jsonl").open()]
    _same(samples, direct)


def test_batch_is_its_own_flag_never_an_abbreviation_of_batch_size(tmp_path, capsys):
    """Before: argparse took --batch for --batch-size and asked for its value."""
    base = ["run", "--task", "cmmlu", "--data", "../shared/data/cmmlu", "--model", "hf:/x",
            "--output", str(tmp_path / "x")]
    assert main([*base, "--batch"]) == 2
    err = capsys.readouterr().err
    assert "--batch" in err and "expected one argument" not in err
    with pytest.raises(SystemExit):
        main([*base, "--batch-siz", "4"])
    assert "unknown option --batch-siz" in capsys.readouterr().err


def test_a_damaged_batches_file_is_one_line(batches, shared, tmp_path, capsys):
    command = ["run", "--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"),
               "--subjects", "arts", "--limit", "1", "--shots", "0", "--quiet", "--no-store",
               "--model", "openai:tiny", "--base-url", batches.url, "--scoring", "echo",
               "--batch", "--output", str(tmp_path / "run")]
    assert main(command) == 0
    (tmp_path / "run" / "batches.json").write_text('{"batches": [{"id": 3}]}')
    capsys.readouterr()
    assert main(command) == 2  # checked when the run starts, cached requests or not
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "batches.json: batches[0].id is not a non-empty string" in err[0]


class Sampler:
    """A server that samples, without a model: the n-th time it is sent a body it answers
    option "ABCD"[n % 4] (every draw of a question differs; a request sent once is "A")."""

    def __init__(self):
        self.seen: dict[str, int] = {}

    def handle(self, path, body):
        key = json.dumps(body, sort_keys=True)
        n = self.seen[key] = self.seen.get(key, -1) + 1
        return {"choices": [{"index": 0, "text": " " + "ABCD"[n % 4], "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 1, "total_tokens": 51}}


@pytest.fixture
def sampler(monkeypatch):
    monkeypatch.setenv("LOCALEVAL_BATCH_POLL_MAX_S", "0.02")
    s = BatchServer(Sampler())
    yield s
    s.stop()


def _sampled(server, folder, repeats: int):
    backend = OpenAIBackend("tiny", base_url=server.url, batch=True)
    return evaluate(task="tmlu", model=backend, data=SAMPLE_MCQ, limit=2, shots=0,
                    method="generation", repeats=repeats, quiet=True, store=False,
                    output=folder, cache=folder.parent / "cache.sqlite")


def test_each_draw_of_repeats_is_its_own_row(sampler, tmp_path):
    """Before: the 4 draws of a question had one body, so one custom_id: 10 rows for 40
    requests, and every draw the same answer (std 0.00)."""
    record = _sampled(sampler, tmp_path / "run", repeats=4)
    (lines,) = [b["lines"] for b in sampler.batches.values()]
    assert len(lines) == 40 and len({line["custom_id"] for line in lines}) == 40
    bodies = {json.dumps(line["body"], sort_keys=True) for line in lines}
    assert len(bodies) == 10 and not any("seed" in line["body"] for line in lines)  # as sent
    for s in record.samples:  # each question's draws: one of each answer
        assert sorted([s["pred"], *(v["pred"] for v in s["variants"])]) == list("ABCD"), s
    assert record.results["robustness"]["draws"]["std"] > 0


def test_a_single_draw_keeps_the_id_it_had_so_an_earlier_batch_re_attaches():
    body = {"model": "tiny", "prompt": "Q", "max_tokens": 8}
    before = "le-" + "b647462da0ca293bbcd4571fd0a8482f"  # custom_id before draws were numbered
    assert openai_batch.custom_id("/v1/completions", body) == before
    assert openai_batch.custom_id("/v1/completions", body, 0) == before
    assert openai_batch.custom_id("/v1/completions", body, 1) != before


def test_a_request_answered_twice_in_the_output_file_fails_and_a_rerun_sends_it(sampler,
                                                                               tmp_path):
    """Before: the last of the two rows was read ("B" where the first said "A")."""
    sampler.mode = "twice"
    record = _sampled(sampler, tmp_path / "run", repeats=1)
    assert record.results["n_failed"] == len(record.samples) == 10
    for s in record.samples:
        assert s["pred"] is None and "in more than one row of batch batch_" in s["error"], s
    sampler.mode = "complete"
    again = _sampled(sampler, tmp_path / "run", repeats=1)
    assert [len(b["lines"]) for b in sampler.batches.values()] == [10, 10]
    assert again.results["n_failed"] == 0


def test_a_batch_submitted_before_draws_were_numbered_re_attaches(sampler, tmp_path,
                                                                 monkeypatch):
    """A run from before the change (one id for every draw of a question) killed while its
    batch is in flight: the rerun re-attaches it for draw 0 and submits only draws 1 to 3."""
    sampler.mode = "hold"
    real_sleep, real_id = openai_batch.time.sleep, openai_batch.custom_id

    def killed(seconds):
        raise KeyboardInterrupt

    monkeypatch.setattr(openai_batch.time, "sleep", killed)
    monkeypatch.setattr(openai_batch, "custom_id", lambda endpoint, body, draw=None:
                        real_id(endpoint, body))  # the old scheme
    command = ["run", "--task", "tmlu", "--data", str(SAMPLE_MCQ), "--limit", "2", "--shots",
               "0", "--method", "generation", "--repeats", "4", "--quiet", "--no-store",
               "--model", "openai:tiny", "--base-url", sampler.url, "--batch",
               "--output", str(tmp_path / "run")]
    assert main(command) == 130
    monkeypatch.setattr(openai_batch.time, "sleep", real_sleep)
    monkeypatch.setattr(openai_batch, "custom_id", real_id)
    sampler.mode = "complete"
    assert main(command) == 0
    assert [len(b["lines"]) for b in sampler.batches.values()] == [10, 30]
    samples = [json.loads(x) for x in (tmp_path / "run" / "samples.jsonl").open()]
    for s in samples:
        assert sorted([s["pred"], *(v["pred"] for v in s["variants"])]) == list("ABCD"), s
