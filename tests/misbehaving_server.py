"""A loopback OpenAI-compatible server that misbehaves (from the hardening pass, issue 24):
``/v1/models`` answers, and a completion either trickles a valid reply one byte at a time or
fails with the API key echoed back in the form :attr:`Misbehaving.mode` names."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

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


@contextlib.contextmanager
def serve_misbehaving() -> Iterator[str]:
    """The server on 127.0.0.1 while the block runs: yields its ``host:port``."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Misbehaving)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
