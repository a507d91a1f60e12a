"""``--batch`` within its limits (issue 47 items 9 and 10), against the loopback Batch API server
(:mod:`batch_server`) over model-free handlers: output files read line by line under
``--max-reply-mb`` (never whole), a batch that stays in progress polled with a line on stderr
each time up to ``--batch-deadline`` (then a resumable stop that the next invocation
re-attaches), and ``--max-spend`` honoured by costing each batch before it is submitted."""

from __future__ import annotations

import json
import threading
import tracemalloc

from batch_server import BatchServer

import localeval.backends.openai_batch as openai_batch
from localeval.api import evaluate
from localeval.backends.openai_compat import OpenAIBackend
from localeval.cli import main
from localeval.demo.mcq import SAMPLE_MCQ


class Padded:
    """Answers "A" with ``pad`` bytes of padding in each reply (the first one ``first`` bytes):
    an output file of a few MB from a few requests."""

    def __init__(self, pad: int, first: int):
        self.pad, self.first, self.n = pad, first, 0

    def handle(self, path, body):
        self.n += 1
        return {"choices": [{"index": 0, "text": " A", "finish_reason": "stop"}],
                "padding": "x" * (self.first if self.n == 1 else self.pad),
                "usage": {"prompt_tokens": 50, "completion_tokens": 1, "total_tokens": 51}}


class Billed:
    """Answers "A", billing a third of the prompt's UTF-8 bytes and every ``max_tokens``: the
    tokens a model at its most verbose would take."""

    def __init__(self):
        self.billed: list[tuple[int, int]] = []

    def handle(self, path, body):
        prompt = len(json.dumps(body.get("prompt", body.get("messages"))).encode()) // 3
        self.billed.append((prompt, body["max_tokens"]))
        return {"choices": [{"index": 0, "text": " A", "finish_reason": "length"}],
                "usage": {"prompt_tokens": prompt, "completion_tokens": body["max_tokens"],
                          "total_tokens": prompt + body["max_tokens"]}}


def _server(model, monkeypatch, mode="complete"):
    monkeypatch.setenv("LOCALEVAL_BATCH_POLL_MAX_S", "0.02")
    return BatchServer(model, mode=mode)


def _command(server, folder, *more):
    return ["run", "--task", "tmlu", "--data", str(SAMPLE_MCQ), "--shots", "0", "--method",
            "generation", "--quiet", "--no-store", "--no-report", "--model", "openai:tiny",
            "--base-url", server.url, "--batch", "--output", str(folder), *more]


def test_an_output_file_is_read_a_row_at_a_time_under_max_reply_mb(monkeypatch, tmp_path):
    """Before: the whole file was read at once (3.5 MB here: bytes, text and every row parsed
    held together, past --max-reply-mb 1); now one row at a time, and a row over the limit
    fails its request alone with a reason naming the limit."""
    server = _server(Padded(pad=200_000, first=1_500_000), monkeypatch)
    peaks: list[int] = []
    before: list[int] = []
    real_wait = openai_batch.BatchPoster._wait

    def waited(self, *args, **kwargs):  # the server has written its files: measure the read
        state = real_wait(self, *args, **kwargs)
        tracemalloc.reset_peak()
        before.append(tracemalloc.get_traced_memory()[0])  # the server's files among it
        return state

    real_post = openai_batch.BatchPoster.post_all

    def posted(self, *args, **kwargs):  # waited, then read
        out = real_post(self, *args, **kwargs)
        peaks.append(tracemalloc.get_traced_memory()[1] - before[-1])
        return out

    monkeypatch.setattr(openai_batch.BatchPoster, "_wait", waited)
    monkeypatch.setattr(openai_batch.BatchPoster, "post_all", posted)
    try:
        backend = OpenAIBackend("tiny", base_url=server.url, batch=True, max_reply_mb=1)
        tracemalloc.start()
        record = evaluate(task="tmlu", model=backend, data=SAMPLE_MCQ, shots=0,
                          method="generation", quiet=True, store=False, output=tmp_path / "run",
                          cache=tmp_path / "cache.sqlite")
    finally:
        tracemalloc.stop()
        server.stop()
    (out,) = [f for k, f in server.files.items() if len(f) > 2_000_000]
    assert len(out) > 3_000_000
    # never the file, nor a row past the limit: held up to 1 MB (and the slack of a growing
    # buffer), then let go; the whole file read at once held 17 MB here
    assert peaks and max(peaks) < 2 * 2**20, peaks
    failed = [s for s in record.samples if s.get("failed")]
    assert len(failed) == 1 and "over the limit of 1 MB" in failed[0]["error"], failed
    assert "--max-reply-mb" in failed[0]["error"]
    assert all(s["pred"] == "A" for s in record.samples if not s.get("failed"))


def test_a_batch_in_progress_is_polled_aloud_until_the_deadline_then_re_attached(
        monkeypatch, tmp_path, capsys):
    """Before: polled for ever, printing nothing when stderr is not a terminal (here the
    server is let go after 5 s, and the old code then finished with exit 0)."""
    server = _server(Padded(pad=0, first=0), monkeypatch, mode="hold")
    timer = threading.Timer(5.0, lambda: setattr(server, "mode", "complete"))
    timer.start()
    try:
        command = _command(server, tmp_path / "run", "--limit", "1",
                           "--batch-deadline", "0.0003")  # about a second
        assert main(command) == 5
        err = capsys.readouterr().err.strip().splitlines()
        (batch_id,) = server.batches
        polls = [line for line in err if line.startswith(f"batch {batch_id}: in_progress")]
        assert len(polls) >= 2, err  # one line each poll, stderr not being a terminal
        assert batch_id in err[-1] and "--batch-deadline" in err[-1] and "rerun" in err[-1]
        kept = json.loads((tmp_path / "run" / "batches.json").read_text())["batches"]
        assert [b["id"] for b in kept] == [batch_id]
        server.mode = "complete"
        assert main(command) == 0
        assert (server.uploads, server.creates) == (1, 1)  # re-attached, not submitted again
    finally:
        timer.cancel()
        server.stop()


def test_batch_deadline_must_be_a_positive_number_of_hours(tmp_path, capsys):
    base = ["run", "--task", "tmlu", "--data", str(SAMPLE_MCQ), "--model", "openai:tiny",
            "--base-url", "http://127.0.0.1:9/v1", "--batch", "--output", str(tmp_path / "r")]
    assert main([*base, "--batch-deadline", "0"]) == 2
    assert "--batch-deadline must be a positive number of hours" in capsys.readouterr().err


def _priced(model: Billed, price_in: float, price_out: float) -> float:
    return sum(p * price_in + c * price_out for p, c in model.billed) / 1e6


def test_max_spend_splits_the_batches_and_stops_resumably(monkeypatch, tmp_path, capsys):
    """Before: --batch ignored --max-spend (210 requests in one batch, 10 times the budget).
    Now no batch is submitted whose upper bound (each prompt's UTF-8 bytes at the input price,
    max_tokens at the output price) passes what is left; the run stops as the direct one
    does (exit 4), and the same command with a larger budget sends only what is missing."""
    model = Billed()
    server = _server(model, monkeypatch)
    try:
        command = _command(server, tmp_path / "run", "--repeats", "14", "--price",
                           "in=100,out=1000")
        assert main([*command, "--max-spend", "3"]) == 4
        err = capsys.readouterr().err.strip().splitlines()
        assert "budget reached" in err[-1] and "--max-spend 3" in err[-1], err
        spent = _priced(model, 100, 1000)
        assert 0 < spent <= 3, spent
        sent = [len(b["lines"]) for b in server.batches.values()]
        assert len(sent) >= 2 and sent[0] > 1 and sum(sent) < 210, sent  # split, stopped short
        assert main([*command, "--max-spend", "100"]) == 0
        assert sum(len(b["lines"]) for b in server.batches.values()) == 210  # none twice
    finally:
        server.stop()


def test_max_tokens_total_bounds_each_batch_too(monkeypatch, tmp_path):
    model = Billed()
    server = _server(model, monkeypatch)
    try:
        assert main([*_command(server, tmp_path / "run", "--repeats", "4"),
                     "--max-tokens-total", "3000"]) == 4
        assert 0 < sum(p + c for p, c in model.billed) <= 3000
    finally:
        server.stop()
