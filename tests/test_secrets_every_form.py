"""No credential reaches a file, in any form it can be given (issue 33 item 5): each form is run
through the command line, and every file the run writes, the SQLite results store and what is
printed are searched for it. One mechanism redacts them all: ``backends/secrets.py``, with the
secret options declared on ``BackendConfig``'s fields."""

from __future__ import annotations

import base64
import dataclasses
import json
import sys
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from misbehaving_server import KEY, Misbehaving, serve_misbehaving
from offline_runs import AlwaysLetter, stand_in_model

import localeval.run
from localeval.backends.base import Generate, error_of
from localeval.backends.config import BackendConfig
from localeval.backends.secrets import redact_url
from localeval.cli import main

SAFETY_SAMPLE = (Path(__file__).resolve().parents[1] / "src" / "localeval" / "data" / "sample"
                 / "safety" / "items.jsonl")
STAND_IN = stand_in_model()  # a model folder the checks accept; never loaded


def _leaks(tmp_path, printed: str, secrets: list[str]) -> list[str]:
    """Where any of ``secrets`` is: each file under ``tmp_path`` (the run folder, its cache,
    report and figures, the results store) and what was printed."""
    found = [f"{path.relative_to(tmp_path)}: {s}" for path in sorted(tmp_path.rglob("*"))
             if path.is_file() for s in secrets if s.encode() in path.read_bytes()]
    return found + [f"printed: {s}" for s in secrets if s in printed]


@pytest.fixture
def offline(shared, tmp_path, monkeypatch):
    """``run`` through the CLI with every model answering "A" (no server, no weights): the
    command line, config.json, the report and the store are written as for any run."""
    monkeypatch.setattr(localeval.run, "load_backend", lambda spec, **kw: AlwaysLetter("A"))
    monkeypatch.setenv("LOCALEVAL_STORE", str(tmp_path / "store.sqlite"))
    return ["run", "--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"), "--subjects",
            "agronomy", "--limit", "2", "--output", str(tmp_path / "RUN")]


FORMS = {  # before the fix, each secret was kept in the files named
    "equals form": (["--model", "openai:m", "--base-url=http://alice:PWeq1@127.0.0.1:9/v1"],
                    ["PWeq1"]),  # config.json command, report.html, the store
    "second replica": (["--model", "openai:m", "--base-url",
                        "http://alice:PWr1@127.0.0.1:9/v1,http://bob:PWr2@127.0.0.1:8/v1"],
                       ["PWr1", "PWr2"]),  # PWr2: command, report.html, the store
    "query key": (["--model", "openai:m", "--base-url",
                   "http://127.0.0.1:9/v1?api_key=KEYq1&token=KEYq2"], ["KEYq1", "KEYq2"]),
    "hub token": (["--model", STAND_IN, "--model-args", "token=hf_SECRETtok1,revision=main"],
                  ["hf_SECRETtok1"]),
    "role token": (["--model", STAND_IN, "--model-args=use_auth_token=hf_SECRETtok2"],
                   ["hf_SECRETtok2"]),
    # issue 48 item 5: a gateway's key in the query, by names we did not know (config.json's
    # command and base_url, report.html, the store)
    "API Management key": (["--model", "openai:m", "--base-url",
                            "http://127.0.0.1:9/v1?subscription-key=SUBsk1&api-version=V1"],
                           ["SUBsk1"]),
    "Functions code": (["--model", "openai:m", "--base-url=http://127.0.0.1:9/v1?code=FNc1"],
                       ["FNc1"]),
    "any query value": (["--model", "openai:m", "--base-url",
                         "http://127.0.0.1:9/v1?X-Amz-Signature=SIGa1#frag=FRa2"],
                        ["SIGa1", "FRa2"]),
}


@pytest.mark.parametrize("form", FORMS)
def test_no_secret_on_the_command_line_reaches_a_file(form, offline, tmp_path, capsys,
                                                      monkeypatch):
    extra, secrets = FORMS[form]
    monkeypatch.setattr(sys, "argv", ["localeval", *offline, *extra])  # as a shell runs it
    assert main([*offline, *extra]) == 0
    printed = capsys.readouterr()
    assert (tmp_path / "RUN" / "report.html").is_file() and (tmp_path / "store.sqlite").is_file()
    assert _leaks(tmp_path, printed.out + printed.err, secrets) == []
    command = json.loads((tmp_path / "RUN" / "config.json").read_text())["command"]
    assert len(command) == 1 + len(offline) + len(extra)  # redacted, not dropped


def test_a_store_url_is_never_recorded_nor_printed_in_full(offline, tmp_path, capsys,
                                                           monkeypatch):
    store = "postgresql://u:PWs1@127.0.0.1:1/db?password=PWs2&sslmode=disable"
    monkeypatch.setattr(sys, "argv", ["localeval", *offline, "--model", STAND_IN,
                                      f"--store={store}"])
    assert main([*offline, "--model", STAND_IN, f"--store={store}"]) == 0  # the run is whole
    printed = capsys.readouterr()
    warning = [line for line in printed.err.splitlines() if line.startswith("warning")]
    assert len(warning) == 1 and "u:***@127.0.0.1:1/db?password=***" in warning[0], warning
    assert _leaks(tmp_path, printed.out + printed.err, ["PWs1", "PWs2"]) == []
    assert main(["leaderboard", "--task", "cmmlu", "--store", store]) == 2
    err = capsys.readouterr().err
    assert "PWs1" not in err and "PWs2" not in err and "password=***" in err


def test_a_store_password_with_a_comma_is_not_recorded(offline, tmp_path, capsys, monkeypatch):
    """Before (issue 48 item 5): stderr was redacted, but config.json's command (and the report)
    kept "postgresql://alice:pw,SECRET@…": the command line was redacted comma by comma."""
    store = "postgresql://alice:pw,PWc2@127.0.0.1:1/db"
    for argv in ([*offline, "--model", STAND_IN, "--store", store],
                 [*offline, "--model", STAND_IN, f"--store={store}"]):
        monkeypatch.setattr(sys, "argv", ["localeval", *argv])
        assert main(argv) == 0  # the store cannot be reached: a warning, the run is whole
        printed = capsys.readouterr()
        assert _leaks(tmp_path, printed.out + printed.err, ["PWc2", "pw,"]) == []
        command = json.loads((tmp_path / "RUN" / "config.json").read_text())["command"]
        assert any("127.0.0.1:1/db" in arg for arg in command), command  # the rest is kept


def test_a_key_given_to_api_key_env_is_refused_without_being_repeated(offline, tmp_path,
                                                                      capsys, monkeypatch):
    """Before: ``--api-key-env sk-…`` ran (with no key) and recorded the key in config.json's
    command, the report and the store."""
    key = "sk-proj-KEYenv1"
    for given in (key, "KEYenv1abc", "NO_SUCH_VARIABLE_SET"):
        argv = [*offline, "--model", "openai:m", "--base-url", "http://127.0.0.1:9/v1",
                "--api-key-env", given]
        monkeypatch.setattr(sys, "argv", ["localeval", *argv])
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--api-key-env takes the NAME" in err, err
        assert given not in err and "KEYenv1" not in err
    assert list(tmp_path.iterdir()) == []  # refused before anything is written
    monkeypatch.setenv("MY_GATEWAY_KEY", key)  # a variable that is set is taken as before
    argv = [*offline, "--model", "openai:m", "--api-key-env", "MY_GATEWAY_KEY"]
    monkeypatch.setattr(sys, "argv", ["localeval", *argv])
    assert main(argv) == 0


class Gateway:
    """A loopback gateway that takes its key in the query (Azure API Management, Azure
    Functions): it lists one model, and answers each POST with HTTP 400 quoting the path and
    query it was called at, as a gateway's error page does."""

    def __init__(self):
        from quiet_handler import LoopbackServer, QuietHandler

        class Handler(QuietHandler):
            def do_GET(self):
                self.send_bytes(200, b'{"data": [{"id": "m"}]}')

            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_bytes(400, json.dumps({"error": f"no route {self.path}"}).encode())

        self.server = LoopbackServer()
        self.url = self.server.serve(Handler) + "/v1"


@pytest.fixture
def gateway():
    g = Gateway()
    yield g
    g.server.stop()


@pytest.mark.parametrize("query, secret", [("subscription-key=SUBgw1", "SUBgw1"),
                                           ("code=FNgw2&x=1", "FNgw2"),
                                           ("deployment=DEPLOYgw3", "DEPLOYgw3")])
def test_a_gateways_query_key_reaches_no_file_through_a_real_backend(query, secret, gateway,
                                                                     shared, tmp_path, capsys):
    """Before: each sample's error ("HTTP 400 from http://…/completions?code=FN…", with the
    server's echo of it) kept the key in samples.jsonl, results.json and the report."""
    out = tmp_path / "RUN"
    code = main(["run", "--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"),
                 "--subjects", "agronomy", "--limit", "2", "--model", "openai:m", "--base-url",
                 f"{gateway.url}?{query}", "--max-retries", "0", "--output", str(out),
                 "--quiet", "--no-store"])
    printed = capsys.readouterr()
    assert code == 3  # every sample failed (the gateway refuses them), as it should
    errors = [json.loads(line)["error"] for line in (out / "samples.jsonl").open()]
    assert all("HTTP 400 from" in e and "=***" in e for e in errors), errors
    assert _leaks(tmp_path, printed.out + printed.err, [secret]) == []


def test_an_identity_holds_no_query_value_yet_tells_endpoints_apart(gateway):
    """The identity (config.json's backend, the cache key) shows no query value; a digest of
    the parameters that are not a key keeps two deployments apart in the cache, and a new key
    still reads the cached answers; a URL without a query has the identity it always had."""
    from localeval.backends.openai_compat import OpenAIBackend

    def identity(query: str) -> dict:
        backend = OpenAIBackend("m", base_url=f"{gateway.url}{query}", max_retries=0)
        assert "VALUE" not in json.dumps(backend.identity), backend.identity
        return backend.identity

    plain = identity("")
    assert plain["base_url"] == gateway.url and "query_digest" not in plain
    assert identity("?code=VALUEk1")["base_url"] == f"{gateway.url}?code=***"
    assert identity("?code=VALUEk1") == identity("?code=VALUEk2")  # a rotated key
    a, b = identity("?deployment=VALUEa&code=VALUEk1"), identity("?deployment=VALUEb&code=VALUEk1")
    assert a["base_url"] == b["base_url"] == f"{gateway.url}?deployment=***&code=***"
    assert a["query_digest"] != b["query_digest"]


def test_a_url_without_a_scheme_is_not_printed_with_its_password(offline, capsys,
                                                                 monkeypatch):
    monkeypatch.undo()  # the real openai backend: it fails to reach the URL
    code = main([*offline, "--model", "openai:m", "--base-url", "alice:PWn1@127.0.0.1:1/v1"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error:") and len(err.strip().splitlines()) == 1
    assert "PWn1" not in err and "alice" not in err  # before: "… server at alice:PWn1@…"


def test_every_secret_option_is_declared():
    """The declarations the redaction reads: a URL option and the keys of a dict option."""
    meta = {f.name: f.metadata for f in dataclasses.fields(BackendConfig)}
    assert meta["base_url"]["secret"] == "url"
    assert {"token", "use_auth_token"} <= meta["model_args"]["secret_keys"]
    assert BackendConfig.redacted({"model_args": {"token": "hf_x", "revision": "main"},
                                   "base_url": "http://a:b@h/v1?key=k,c:d@h2/v1"}) == {
        "model_args": {"token": "***", "revision": "main"},
        "base_url": "http://h/v1?key=***,h2/v1"}


@pytest.mark.parametrize("url, shown", [
    ("http://alice:PW@h:8/v1", "http://h:8/v1"),
    ("alice:PW@h/v1", "h/v1"),
    ("https://h/v1?api-key=K&x=1&Token=T", "https://h/v1?api-key=***&x=***&Token=***"),
    ("https://h/v1?code=C&subscription-key=S&flag&empty=", "https://h/v1?code=***&"
     "subscription-key=***&***&empty="),
    ("https://h/v1#access_token=T", "https://h/v1#***"),
    ("https://TOKEN@h/v1", "https://h/v1"),
    ("http://h/v1", "http://h/v1"),
])
def test_redact_url(url, shown):
    assert redact_url(url) == shown


@pytest.mark.slow
def test_a_server_url_and_a_hub_token_never_reach_a_real_backends_identity(tiny_llama, shared,
                                                                          tmp_path, capsys,
                                                                          monkeypatch):
    """The real backends record their identity (config.json "backend", the cache key, the
    report, the store): a served URL's password and query key, and an hf token, redacted."""
    from openai_server import ModelServer

    monkeypatch.setenv("LOCALEVAL_STORE", str(tmp_path / "store.sqlite"))
    server = ModelServer(tiny_llama, name="tiny")
    host = server.url.split("://")[1].removesuffix("/").removesuffix("/v1")
    common = ["run", "--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"), "--subjects",
              "agronomy", "--limit", "2", "--method", "generation", "--max-tokens", "2"]
    try:
        assert main([*common, "--model", "openai:tiny", "--output", str(tmp_path / "served"),
                     f"--base-url=http://alice:PWid1@{host}/v1?api_key=KEYid2"]) == 0
    finally:
        server.stop()
    assert main([*common, "--model", f"hf:{tiny_llama}", "--output", str(tmp_path / "hub"),
                 "--model-args", "token=hf_SECRETid3"]) == 0
    printed = capsys.readouterr()
    assert _leaks(tmp_path, printed.out + printed.err, ["PWid1", "KEYid2", "hf_SECRETid3"]) == []
    served = (tmp_path / "served" / "config.json").read_text()
    assert f'"base_url": "http://{host}/v1?api_key=***"' in served
    assert '"token": "***"' in (tmp_path / "hub" / "config.json").read_text()


@pytest.fixture
def server():
    """A server that echoes the key back in an error (:mod:`misbehaving_server`)."""
    with serve_misbehaving() as address:
        yield address


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


class DropsLogprobs:
    """A loopback server whose every other completion lacks its log-probs (dropped under
    load, as a busy server does)."""

    def __init__(self):
        from quiet_handler import LoopbackServer, QuietHandler

        server, self.calls = self, 0

        class Handler(QuietHandler):
            def do_GET(self):
                self.send_bytes(200, b'{"data": [{"id": "m", "max_model_len": 4096}]}')

            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                server.calls += 1
                choice = {"index": 0, "text": "A"}
                if server.calls % 2:
                    choice["logprobs"] = {"top_logprobs": [{"A": -0.1}]}
                self.send_bytes(200, json.dumps({"choices": [choice]}).encode())

        self.server = LoopbackServer()
        self.url = self.server.serve(Handler) + "/v1"


def test_a_reply_without_log_probs_names_the_server_without_its_key(shared, tmp_path, capsys):
    """Issue 63 item 7: "does http://…/v1?api-key=SECRET support logprobs?" named the server
    with its query, into samples.jsonl, results.json, report.html and the store."""
    server = DropsLogprobs()
    try:
        code = main(["run", "--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"),
                     "--subjects", "agronomy", "--limit", "2", "--model", "openai:m",
                     "--base-url", f"{server.url}?api-key=SECRETe7", "--max-retries", "0",
                     "--output", str(tmp_path / "RUN"), "--quiet", "--store",
                     str(tmp_path / "store.sqlite")])
    finally:
        server.server.stop()
    printed = capsys.readouterr()
    assert code in (0, 3), printed.err  # a sample failed, as it should
    errors = [e for line in (tmp_path / "RUN" / "samples.jsonl").open()
              if (e := json.loads(line).get("error"))]
    assert any("api-key=*** support logprobs" in e for e in errors), errors
    assert _leaks(tmp_path, printed.out + printed.err, ["SECRETe7"]) == []


def test_a_tokenize_endpoint_that_fails_is_named_without_its_key():
    """Issue 63 item 7: "the server's tokenize?api-key=SECRET failed for candidate 'Harmful'"
    (``label_tokens.ServerTokens._ask``), kept as the samples' error."""
    from localeval.backends.label_tokens import VLLM, ServerTokens

    def post(calls):  # the empty text tokenises; any candidate fails (a server under load)
        return [{"tokens": []} if body["prompt"] == "" else "HTTP 503 from the server"
                for _, body in calls]

    tokens = ServerTokens(post, "http://127.0.0.1:9?api-key=SECRETt7", "m", VLLM)
    (why,) = tokens.first_tokens(["Harmful"])
    assert "failed for candidate 'Harmful'" in str(why)
    assert "SECRETt7" not in str(why) and "api-key=***" in str(why), why


def test_the_models_endpoint_is_named_with_its_query_after_its_path(shared, tmp_path, capsys):
    """A bad /v1/models reply named "http://…/v1?api-key=***/models": the query redacted, but
    the endpoint misnamed; now it is the URL called, redacted."""
    from quiet_handler import LoopbackServer, QuietHandler

    class Handler(QuietHandler):
        def do_GET(self):  # a list, not {"data": [...]}
            self.send_bytes(200, b"[]")

    server = LoopbackServer()
    url = server.serve(Handler) + "/v1"
    try:
        code = main(["run", "--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"),
                     "--subjects", "agronomy", "--limit", "1", "--model", "openai:m",
                     "--base-url", f"{url}?api-key=SECRETm7", "--output",
                     str(tmp_path / "RUN"), "--no-store"])
    finally:
        server.stop()
    err = capsys.readouterr().err
    assert code == 2 and f"{url}/models?api-key=*** replied" in err, err
    assert "SECRETm7" not in err
