"""A fault-injecting HTTP proxy for tests: between localeval and a loopback server, it answers
each POST according to a schedule of faults (then forwards normally), the faults a real
deployment throws at a client: dropped connections, 429 with Retry-After, 500s, replies slower
than the client's timeout, truncated JSON, non-JSON 200s, 200s without logprobs, and a gateway
that echoes the Authorization header in its error."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler

from quiet_handler import LoopbackServer

FAULTS = ("drop", "429", "500", "slow", "truncated", "non_json", "no_logprobs", "echo_key")


class FaultProxy(LoopbackServer):
    def __init__(self, upstream: str, schedule: list[str] | None = None, slow_s: float = 2.0,
                 once_per_request: bool = False):
        """``once_per_request``: a request already hit by a fault is forwarded normally when it
        comes again (its retry), so each scheduled fault meets a different request."""
        self.upstream = upstream.rstrip("/")
        self.once_per_request, self.faulted = once_per_request, set()
        self.schedule = list(schedule or [])
        self.slow_s = slow_s
        self.seen: list[str] = []  # the fault (or "ok") each POST got
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _reply(self, code: int, data: bytes, headers: dict | None = None,
                       length: int | None = None) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data) if length is None else length))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()

            def do_GET(self):
                code, data = proxy.forward("GET", self.path, None, dict(self.headers))
                self._reply(code, data)

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                # faults go to the API calls, not to the label-token set-up (/tokenize)
                fault = proxy.next_fault(body) if self.path.startswith("/v1/") else "ok"
                if fault == "drop":
                    self.close_connection = True
                    return
                if fault in ("429", "500"):
                    retry = {"Retry-After": "1"} if fault == "429" else {}
                    return self._reply(int(fault), b'{"error": "try later"}', retry)
                if fault == "non_json":
                    return self._reply(200, b"<html>gateway says hello</html>")
                if fault == "echo_key":
                    auth = self.headers.get("Authorization", "")
                    return self._reply(502, f"bad gateway; you sent Authorization: {auth}"
                                       .encode())
                if fault == "slow":
                    time.sleep(proxy.slow_s)
                code, data = proxy.forward("POST", self.path, body, dict(self.headers))
                if fault == "truncated":
                    self._reply(code, data[: len(data) // 2], length=len(data))
                    self.close_connection = True
                    return
                if fault == "no_logprobs" and code == 200:
                    reply = json.loads(data)
                    for choice in reply.get("choices", []):
                        choice.pop("logprobs", None)
                    data = json.dumps(reply).encode()
                self._reply(code, data)

        self.url = self.serve(Handler) + "/v1"

    def next_fault(self, body: bytes) -> str:
        with self.lock:
            fresh = not (self.once_per_request and body in self.faulted)
            fault = self.schedule.pop(0) if self.schedule and fresh else "ok"
            if fault != "ok":
                self.faulted.add(body)
            self.seen.append(fault)
            return fault

    def forward(self, method: str, path: str, body: bytes | None, headers: dict):
        keep = {k: v for k, v in headers.items() if k.lower() in ("authorization",
                                                                  "content-type")}
        req = urllib.request.Request(self.upstream.removesuffix("/v1") + path, data=body,
                                     headers=keep, method=method)
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()
