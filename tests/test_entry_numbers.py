"""Issue 32, items 7, 8, 9 and 10: what a server says about itself (/v1/models), the server's
address, the size of its replies, and the numbers given by flags and environment variables are
checked where they enter: one line, or a failed request with its reason. Loopback servers with
hand-written replies; no model is built."""

from __future__ import annotations

import json
import threading

import pytest
from offline_runs import one_line
from scripted_server import ScriptedServer, top_logprobs_reply

from localeval.backends.base import ScoreNext
from localeval.cli import main
from localeval.demo.mcq import SAMPLE_MCQ

NOBODY = "http://127.0.0.1:9/v1"  # the discard port: nothing answers there


def _run(*more):
    return main(["run", "--task", "tmlu", "--data", str(SAMPLE_MCQ), "--method", "likelihood",
                 "--shots", "0", "--no-store", "--no-report", *more])


# ------------------------------------------------------------------ item 10: numbers
@pytest.mark.parametrize("flag, value, message", [
    ("--timeout", "nan", "--timeout must be a number of seconds in (0, 604800], not nan"),
    ("--timeout", "inf", "--timeout must be a number of seconds"),
    ("--timeout", "-1", "--timeout must be a number of seconds"),
    ("--rate-limit", "nan", "--rate-limit must be a positive number per second, not nan"),
    ("--rate-limit", "inf", "--rate-limit must be a positive number per second, not inf"),
    ("--max-reply-mb", "nan", "--max-reply-mb must be a positive number of MB, not nan"),
    ("--max-reply-mb", "0", "--max-reply-mb must be a positive number of MB, not 0.0"),
])
def test_a_number_flag_that_is_not_finite_or_in_range_isone_line(flag, value, message, capsys,
                                                                  tmp_path, no_model_load):
    """Before: --timeout nan said "cannot reach … Invalid value NaN"; --rate-limit nan ran."""
    assert _run("--model", "openai:m", "--base-url", NOBODY, flag, value, "--output",
                str(tmp_path / "run")) == 2
    one_line(capsys, message)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("name, value, message", [
    ("LOCALEVAL_MAX_FIELD_BYTES", "abc", "$LOCALEVAL_MAX_FIELD_BYTES must be an integer"),
    ("LOCALEVAL_MAX_FIELD_BYTES", "-1", "$LOCALEVAL_MAX_FIELD_BYTES must be an integer in [1, "),
    ("LOCALEVAL_CACHE_COMMIT_SECONDS", "abc", "$LOCALEVAL_CACHE_COMMIT_SECONDS must be a number"),
    ("LOCALEVAL_CACHE_COMMIT_SECONDS", "nan", "not 'nan'"),
    ("LOCALEVAL_CACHE_COMMIT_SECONDS", "-1", "in [0, 3600], not '-1'"),
])
def test_a_number_from_the_environment_is_checked_before_anything_loads(
        name, value, message, monkeypatch, capsys, model_folder, no_model_load):
    """Before: abc was a traceback (at import, for LOCALEVAL_MAX_FIELD_BYTES), and -1 said the
    data file was empty."""
    monkeypatch.setenv(name, value)
    assert _run("--model", model_folder) == 2
    one_line(capsys, message)


# ------------------------------------------------------------------ item 7: the server
@pytest.mark.parametrize("models, message", [
    (b"[]", "replied a JSON list"),
    (b"null", "replied a JSON NoneType"),
    (b'"x"', "replied a JSON str"),
    (b'{"data": null}', "replied with data NoneType"),
    (b'{"data": ["m"]}', "with data[0] = 'm'"),
    (b'{"data": [{"id": "m", "max_model_len": "4096"}]}', "max_model_len '4096'"),
])
def test_a_malformed_models_reply_isone_line(models, message, capsys, tmp_path):
    with ScriptedServer(lambda path, body: b"{}", models=models) as server:
        assert _run("--model", "openai:m", "--base-url", server.url, "--output",
                    str(tmp_path / "run")) == 2
    one_line(capsys, f"{server.url}/models replied", message)


@pytest.mark.parametrize("url, message", [
    ("http://127.0.0.1:99999/v1", "Port out of range"),
    ("http://127.0.0.1:80a/v1", "Port could not be cast to integer value"),
    ("127.0.0.1:8000/v1", "is not an http(s) URL with a host"),
])
def test_a_bad_base_url_is_one_line_before_anything_loads(url, message, capsys, tmp_path,
                                                          no_model_load):
    """Before: a 70-line httpx.InvalidURL traceback."""
    assert _run("--model", "openai:m", "--base-url", url, "--output",
                str(tmp_path / "run")) == 2
    one_line(capsys, f"--base-url {url}", message)


# ------------------------------------------------------------------ item 8: reply size
def test_a_reply_over_the_bound_is_a_failed_request_with_the_reason(tmp_path):
    """A reply of 1.8 MB against a bound lowered to 1 MB (the default is 64 MB): the request fails
    for good with the reason, the others are read; declared by Content-Length or not."""
    from localeval.backends.openai_compat import OpenAIBackend

    # over 1 MB of other tokens' log-probs (a top-k entry must be a number: issue 47)
    big = json.dumps({"A": -1.0, "B": -2.0, **{f"t{i}": -9.0 for i in range(120_000)}})

    def reply(path, body):
        return top_logprobs_reply(big if "big" in body["prompt"] else '{"A": -1, "B": -2}')

    with ScriptedServer(reply) as server:
        backend = OpenAIBackend("m", base_url=server.url, max_reply_mb=1, max_retries=2)
        out = backend.run([ScoreNext("small", ("A", "B")), ScoreNext("big", ("A", "B"))])
        asked = len(server.posts)
        default = OpenAIBackend("m", base_url=server.url).run([ScoreNext("big", ("A", "B"))])
    assert out[0].logprobs == {"A": -1, "B": -2}
    assert "over the limit of 1 MB; raise --max-reply-mb" in out[1].error
    assert out[1].reason.permanent
    assert asked == 2  # not retried: the same request gets the same reply
    assert default[0].logprobs == {"A": -1.0, "B": -2.0}


def test_a_streamed_reply_without_a_length_is_bounded_too():
    import socket

    from localeval.backends.async_http import Call, JsonClient

    chunk = b" " * 2**16

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    sent = {"bytes": 0}

    def serve():
        conn, _ = listener.accept()
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        try:
            while sent["bytes"] < 50 * 2**20:
                conn.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                sent["bytes"] += len(chunk)
        except OSError:
            pass  # the client stopped reading
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    client = JsonClient(headers={}, timeout=30, max_retries=0, concurrency=1, rate_limit=None,
                        scrub=str, max_reply_mb=1)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1/completions"
    (response,) = client.post_all([Call(url, {}, lambda reply: None)])
    listener.close()
    assert "more than 1,048,576 bytes, over the limit of 1 MB" in response.error
    assert sent["bytes"] < 50 * 2**20  # it stopped reading long before the end


# ------------------------------------------------------------------ item 9: concurrency
def test_concurrency_costs_what_is_in_flight_not_what_the_flag_says(monkeypatch):
    """Before: --concurrency 100000 made 6,250 httpx clients up front for 15 requests (60 s
    and more). Now the clients made follow the calls: one client for 15 calls."""
    import httpx

    from localeval.backends.openai_compat import OpenAIBackend

    made = []
    real = httpx.AsyncClient

    class Counted(real):
        def __init__(self, *args, **kwargs):
            made.append(kwargs.get("limits"))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(httpx, "AsyncClient", Counted)
    with ScriptedServer(lambda path, body: top_logprobs_reply('{"A": -1, "B": -2}')) as server:
        backend = OpenAIBackend("m", base_url=server.url, concurrency=100_000)
        made.clear()  # the set-up calls (label tokens) made theirs
        out = backend.run([ScoreNext(f"q{i}", ("A", "B")) for i in range(15)])
    assert all(r.logprobs == {"A": -1, "B": -2} for r in out)
    assert len(made) == 1 and made[0].max_connections == 15
