"""Request failures as types (issue 31 item 1): each way a request fails — a timeout, a dropped
connection, an HTTP status, a reply of the wrong shape or with invalid values, a reply over the
size limit, a request over the model's context, one the backend cannot run — is its own kind
with its own rerun advice, carried into samples, results and the report's failure table."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import ThreadingHTTPServer

import pytest
from quiet_handler import QuietHandler

from localeval import evaluate
from localeval.backends.async_http import Call, Invalid, JsonClient
from localeval.backends.base import Failed, Generated, ScoreNext, response_from_json, response_json
from localeval.backends.failures import (
    FAILURE_KINDS,
    BadReply,
    HTTPStatus,
    ModelError,
    OverLimit,
    Timeout,
    Unsupported,
    failure_from,
)
from localeval.report.html import write_report

# path -> (status, body, seconds to wait first); "drop" closes the connection unanswered
SCRIPT = {
    "/timeout": (200, b"{}", 2.0),
    "/drop": ("drop", b"", 0),
    "/refused": (400, b'{"error": "bad request"}', 0),
    "/busy": (503, b"busy", 0),
    "/not-json": (200, b"<html>", 0),
    "/wrong-shape": (200, b'{"choices": []}', 0),
    "/invalid": (200, b'{"value": "NaN"}', 0),
    "/huge": (200, b'{"pad": "' + b"x" * 4096 + b'"}', 0),
}


@pytest.fixture(scope="module")
def scripted():
    class Handler(QuietHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            status, body, wait = SCRIPT[self.path]
            time.sleep(wait)
            if status == "drop":
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            self.send_bytes(status, body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _parse(reply):
    if reply.get("value") == "NaN":
        raise Invalid("the value is NaN")
    return Generated(text=reply["choices"][0]["text"])


EXPECTED = {"/timeout": ("timeout", None), "/drop": ("connection", None),
            "/refused": ("http", True), "/busy": ("http", None),
            "/not-json": ("error_reply", None), "/wrong-shape": ("bad_reply", True),
            "/invalid": ("bad_reply", True), "/huge": ("over_limit", True)}


def _client(timeout: float) -> JsonClient:
    return JsonClient(headers={}, timeout=timeout, max_retries=0, concurrency=8,
                      rate_limit=None, scrub=str, max_reply_mb=1 / 1024)  # 1 KiB: /huge is over


def test_each_server_failure_is_its_own_kind(scripted):
    paths = list(EXPECTED)
    # the deadline is short only for /timeout: a busy machine may take a second to answer
    out = [_client(0.5 if p == "/timeout" else 60).post_all([Call(scripted + p, {}, _parse)])[0]
           for p in paths]
    got = {p: (r.reason.kind, r.reason.permanent) for p, r in zip(paths, out, strict=True)}
    assert got == EXPECTED
    refused = out[paths.index("/refused")].reason
    assert isinstance(refused, HTTPStatus) and refused.status == 400
    assert isinstance(out[paths.index("/timeout")].reason, Timeout)


def test_a_failure_survives_the_cache_as_its_type():
    request = ScoreNext("q", ("A", "B"))
    cached = response_from_json(request, response_json(Failed(OverLimit("over the context"))))
    assert isinstance(cached.reason, OverLimit) and cached.reason.permanent is True
    old = response_from_json(request, {"error": "HTTP 503 from x: busy"})  # before the kinds
    assert old.reason.kind == "unclassified" and old.reason.transient is None
    assert failure_from("HTTP 429 from x", "http").permanent is None  # 429 may pass later
    assert set(FAILURE_KINDS) >= {"timeout", "connection", "http", "bad_reply", "error_reply",
                                  "over_limit", "unsupported", "model_error"}


class FailsByQuestion:
    """A multiple-choice model whose n-th question fails with the n-th failure kind."""

    identity = {"backend": "failing", "model": "failing"}
    KINDS = [Timeout("timeout after 1 s from http://x"), HTTPStatus("HTTP 400 from x", 400),
             BadReply("invalid reply from x: NaN"), OverLimit("prompt over the context"),
             Unsupported("candidates share a first token"), ModelError("CUDA error")]

    def __init__(self):
        self.n = 0

    def run(self, requests, progress=None):
        out = []
        for _ in requests:
            out.append(Failed(self.KINDS[self.n % len(self.KINDS)]))
            self.n += 1
        return out


def test_each_kind_reaches_samples_results_and_the_reports_failure_table(tmp_path):
    data = tmp_path / "exam.jsonl"
    data.write_text("".join(json.dumps({"id": str(i), "subject": "law", "question": f"Q{i}?",
                                        "A": "a", "B": "b", "answer": "A"}) + "\n"
                            for i in range(6)), encoding="utf-8")
    record = evaluate(task="my-exam", model=FailsByQuestion(), data=data, shots=0,
                      output=tmp_path / "run", quiet=True)
    kinds = [f.kind for f in FailsByQuestion.KINDS]
    results = record.results
    assert sorted(f["failure"] for f in results.failures) == sorted(kinds)
    assert results.request_failure_kinds == {k: 1 for k in kinds}
    assert results.request_failures == {"transient": 1, "permanent": 5}
    samples = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").open()]
    assert sorted(s["failure"] for s in samples) == sorted(kinds)
    html = write_report([tmp_path / "run"]).read_text()
    table = html[html.index('id="failures"'):]
    assert all(f">{kind}<" in table for kind in kinds)
