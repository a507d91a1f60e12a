"""Attacks from the hardening pass (issue 24), kept as tests: a line separator in a sample's
text, values that must be refused before anything loads, and duplicate ids. No model is built."""

from __future__ import annotations

import base64
import contextlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote, quote_plus

import pytest

import localeval.run
from localeval import evaluate, load_results, load_run_state
from localeval.backends.base import Failed, Generate, Generated, error_of
from localeval.cli import main
from localeval.demo.mcq import SAMPLE_MCQ

SEPARATORS = "\u2028\u2029\u0085"  # what str.splitlines() splits on, besides \n and \r


class Writes:
    """Generates the answer letter wrapped in every Unicode line separator."""

    identity = {"backend": "writes", "model": "writes"}

    def run(self, requests, progress=None):
        return [Generated(text=f"A{SEPARATORS}B\u2028") for r in requests
                if isinstance(r, Generate)]


def test_a_line_separator_in_a_sample_keeps_the_run_readable(tmp_path, capsys):
    folder = tmp_path / "run"
    record = evaluate(task="tmlu", model=Writes(), data=str(SAMPLE_MCQ), method="generation",
                      output=folder, quiet=True, store=False)
    assert all(SEPARATORS in s["output"] for s in record.samples)
    raw = (folder / "samples.jsonl").read_text(encoding="utf-8")
    assert "\u2028" in raw  # written as it is (ensure_ascii=False), one sample a line
    assert raw.count("\n") == len(record.samples)
    again = load_results(folder)
    assert again.samples == record.samples
    for argv in (["show", str(folder)],
                 ["export", str(folder), "--format", "csv", "--table", "1"],
                 ["report", str(folder)], ["compare", str(folder), str(folder), "--json"]):
        assert main(argv) == 0, capsys.readouterr().err
    assert "unanswered" in json.loads((folder / "results.json").read_text())


@pytest.mark.parametrize("argv, message", [
    (["--task", "tmlu", "--limit", "-1"], "--limit must be at least 1, not -1"),
    (["--task", "tmlu", "--limit", "0"], "--limit must be at least 1, not 0"),
    (["--task", "sea-safeguard", "--limit", "0"], "--limit must be at least 1, not 0"),
    (["--task", "tmlu", "--max-failed", "-0.5"], "--max-failed is a share of the samples"),
    (["--task", "tmlu", "--top-logprobs", "-1"], "--top-logprobs must be at least 1"),
    (["--task", "sea-safeguard", "--bootstrap", "-10"], "--bootstrap must be 0 (no CIs) or"),
    (["--task", "sea-safeguard", "--sensitive", "maybe"], "--sensitive must be one of iris, paper"),
    (["--task", "llm-safety", "--sensitive", "maybe", "--judge-model", "hf:x"],
     "--sensitive must be one of iris, paper"),
])
def test_bad_values_are_one_line_before_anything_loads(argv, message, model_folder, capsys,
                                                       no_model_load):
    assert main(["run", *argv, "--model", model_folder, "--data", str(SAMPLE_MCQ),
                 "--no-store"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_duplicate_question_ids_name_both_rows(tmp_path, capsys, model_folder, no_model_load):
    rows = [{"id": i, "question": f"q{n}", "A": "a", "B": "b", "answer": "A"}
            for n, i in enumerate(["1", "2", "1"], start=1)]
    data = tmp_path / "quiz" / "test.jsonl"
    data.parent.mkdir()
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["run", "--task", "quiz", "--data", str(data.parent), "--shots", "0",
                 "--model", model_folder]) == 2
    err = capsys.readouterr().err
    assert f"{data}, row 3" in err and "'quiz/1' is also row 1's" in err, err


def test_duplicate_safety_items_name_both_rows(tmp_path, capsys, model_folder, no_model_load):
    row = {"subset": "general", "lang": "th", "id": "7", "prompt": "p", "prompt_label": "safe"}
    data = tmp_path / "items.jsonl"
    data.write_text(json.dumps(row) + "\n" + json.dumps({**row, "prompt": "q"}) + "\n")
    assert main(["run", "--task", "sea-safeguard", "--data", str(data), "--model",
                 model_folder]) == 2
    err = capsys.readouterr().err
    assert "row 2" in err and "is also row 1's" in err, err


# ------------------------------------------------------------------ servers that misbehave
KEY = "sk-planted/Key+0123456789abcdef"


class Misbehaving(BaseHTTPRequestHandler):
    """/v1/models answers; a completion either trickles a valid reply one byte at a time
    (``trickle``) or fails with the key echoed in the form the path names."""

    mode = "trickle"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self._send(200, json.dumps({"data": [{"id": "m"}]}).encode())

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if Misbehaving.mode == "trickle":
            body = json.dumps({"choices": [{"text": " fine", "index": 0}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):
                for byte in body:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(0.2)
            return
        self._send(500, Misbehaving.mode.encode())

    def _send(self, status, body):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Misbehaving)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_timeout_is_a_deadline_for_the_whole_request(server):
    """The reply trickles in over ~10 s, each byte well within the timeout of 1 s."""
    from localeval.backends.openai_compat import OpenAIBackend

    Misbehaving.mode = "trickle"
    backend = OpenAIBackend("m", base_url=f"http://{server}/v1", timeout=1, max_retries=0)
    (response,) = backend.run([Generate("hi", max_tokens=4)])
    assert isinstance(response, Failed) and "timeout after 1 s" in response.error


@pytest.mark.parametrize("echo", [
    KEY, json.dumps(KEY), quote(KEY, safe=""), quote_plus(KEY), KEY.upper(), KEY.lower(),
    base64.b64encode(KEY.encode()).decode(), base64.urlsafe_b64encode(KEY.encode()).decode(),
    KEY[:10], "PASSword-42"])
def test_no_form_of_a_secret_reaches_what_is_kept(echo, server, monkeypatch):
    from localeval.backends.openai_compat import OpenAIBackend

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    Misbehaving.mode = f"bad gateway, you sent {echo}!"
    url = f"http://admin:PASSword-42@{server}/v1"
    backend = OpenAIBackend("m", base_url=url, max_retries=0)
    (response,) = backend.run([Generate("hi", max_tokens=4)])
    kept = json.dumps([error_of(response), backend.identity,
                       localeval.run.run_provenance(["localeval", "--base-url", url])])
    assert "bad gateway" in kept and "[key]" in kept
    for secret in (KEY, KEY[:8], "PASSword", quote(KEY, safe=""), KEY.upper()):
        assert secret.lower() not in kept.lower()
    assert f"http://{server}/v1" in kept


# ------------------------------------------------------------------ messages that misled
def test_a_refused_run_leaves_no_folder(tmp_path, capsys):
    assert main(["run", "--task", "tmlu", "--data", str(SAMPLE_MCQ), "--model",
                 f"hf:{tmp_path / 'nowhere'}", "--no-store"]) == 2  # default runs/tmlu/…
    assert "model folder" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("name, text, message", [
    ("empty.jsonl", "", "no questions: the file is empty or has only a header row"),
    ("header.csv", "question,A,B,answer\n", "no questions: the file is empty or has only"),
    ("quote.csv", 'question,A,B,answer\n"What is it?,a,b,A\nq,a,b,B\n',
     "a quoted field is opened and never closed"),
])
def test_data_problems_say_what_they_are(name, text, message, tmp_path, capsys, model_folder,
                                         no_model_load):
    (tmp_path / name).write_text(text)
    assert main(["run", "--task", "mine", "--data", str(tmp_path / name), "--shots", "0",
                 "--model", model_folder, "--no-store"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and name in err


def test_a_numeric_question_is_a_question(tmp_path):
    from localeval.data.mcq_loaders import load_local

    (tmp_path / "nums.jsonl").write_text(json.dumps(
        {"question": 1024, "A": "2^10", "B": "2^9", "answer": "A"}) + "\n")
    (item,) = load_local(tmp_path / "nums.jsonl")["nums"]["test"]
    assert item.question == "1024"


def test_a_rejected_key_is_named_as_such(server, monkeypatch):
    from localeval.backends.openai_compat import OpenAIBackend
    from localeval.errors import LocalevalError

    class Rejects(Misbehaving):
        def do_GET(self):
            self._send(401, b'{"error": "invalid api key"}')

    monkeypatch.setattr(Misbehaving, "do_GET", Rejects.do_GET)
    monkeypatch.setenv("MY_KEY", KEY)
    with pytest.raises(LocalevalError, match=r"rejected the API key \(HTTP 401\): check \$MY_KEY"):
        OpenAIBackend("m", base_url=f"http://{server}/v1", api_key_env="MY_KEY")


def test_a_cached_rerun_counts_each_distinct_request_once(tmp_path):
    from localeval.run import CachedExecutor
    from localeval.store.cache import RequestCache

    a, b = Generate("a", max_tokens=2), Generate("b", max_tokens=2)
    with RequestCache(tmp_path / "c.sqlite") as cache:
        first = CachedExecutor(Writes(), cache, quiet=True, unit="requests")
        first([a, b, a])
        again = CachedExecutor(Writes(), cache, quiet=True, unit="requests")
        again([a, b, a])
    assert first.counts == {"requests_cached": 0, "requests_run": 2}
    assert again.counts == {"requests_cached": 2, "requests_run": 0}


# ------------------------------------------------------------------ tracebacks that were
def test_an_output_folder_under_a_file_is_one_line(tmp_path, capsys, model_folder,
                                                   no_model_load):
    (tmp_path / "plain").write_text("x")
    assert main(["run", "--task", "tmlu", "--data", str(SAMPLE_MCQ), "--model", model_folder,
                 "--output", str(tmp_path / "plain" / "sub"), "--no-store"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a file, not a folder" in err


def test_an_os_error_anywhere_is_one_line(monkeypatch, capsys):
    import localeval.cli.commands

    def full(*args):
        raise OSError(28, "No space left on device", "/runs/x/samples.jsonl.tmp")
    monkeypatch.setattr(localeval.cli.commands, "run_and_report", full)
    assert main(["run", "--task", "tmlu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left on device (/runs/x/samples.jsonl.tmp)" in err


def test_a_cuda_device_this_machine_lacks_is_one_line():
    import torch

    from localeval.backends.hf.backend import _check_device
    from localeval.errors import LocalevalError

    _check_device(torch, "cpu")
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    with pytest.raises(LocalevalError, match=f"torch sees {count} CUDA device"):
        _check_device(torch, f"cuda:{count + 6}")
    with pytest.raises(LocalevalError, match="is not a device name"):
        _check_device(torch, "gpu7")


@pytest.mark.slow
def test_damaged_weights_are_one_line(tiny_llama, tmp_path, capsys):
    import shutil

    copy = tmp_path / "damaged"
    shutil.copytree(tiny_llama, copy)
    (copy / "model.safetensors").write_bytes(b"\x80\x04not weights at all" * 64)
    assert main(["run", "--task", "tmlu", "--data", str(SAMPLE_MCQ), "--model", f"hf:{copy}",
                 "--limit", "1", "--no-store", "--output", str(tmp_path / "run")]) == 2
    # stderr also holds the progress bar (0 of 5 questions): the error is its one other line
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("questions")]
    assert len(err) == 1 and f"cannot load model '{copy}'" in err[0], err


@pytest.mark.slow
def test_a_generated_row_is_reported_as_soon_as_it_ends(tmp_path):
    """Issue 24 item 4: in one decode batch (budgets of 17 and 40 tokens pad to the same row
    width), the 17-token row is handed to the run, and so to the cache, once it ends, not
    when the 40-token row does."""
    from tiny_models import make_model

    from localeval.backends.hf import HFBackend

    backend = HFBackend(str(make_model(tmp_path / "m", layers=2, tied=False)), device="cpu")
    reported = []
    requests = [Generate("問題：一加一是多少？", max_tokens=40),
                Generate("問題：二加二是多少？", max_tokens=17)]
    backend.run(requests, progress=lambda i, r: reported.append((i, backend.stats[
        "decode_steps"])))
    assert [i for i, _ in reported] == [1, 0]  # the short row first, while the long one decodes
    (_, short_steps), (_, long_steps) = reported
    assert short_steps <= 17 < long_steps


def test_a_run_is_finished_only_when_every_file_is_written(tmp_path, monkeypatch):
    """A full disk while the report is written: the folder says failed, not finished, and no
    temporary file is left; the next attempt finishes it from the cache."""
    import localeval.report.html

    real = localeval.report.html.render

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(localeval.report.html, "render", full_disk)
    options = dict(task="tmlu", model=Writes(), data=str(SAMPLE_MCQ), method="generation",
                   output=tmp_path / "run", quiet=True, store=False, report=True)
    with pytest.raises(OSError, match="No space"):
        evaluate(**options)
    state = load_run_state(tmp_path / "run")
    assert state.lifecycle.status == "failed"
    assert "No space left on device" in str(state.lifecycle.error)
    assert not list((tmp_path / "run").glob("*.tmp"))
    monkeypatch.setattr(localeval.report.html, "render", real)
    again = evaluate(**options)
    assert again.status == "finished" and (tmp_path / "run" / "report.html").exists()
    assert json.loads((tmp_path / "run" / "config.json").read_text())["run"]["status"] == \
        "finished"
