"""The base of the tests' loopback HTTP servers: no request log on the test output, one way to
send a reply with its length, and one way to serve on 127.0.0.1 (a free port) until stopped."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class QuietHandler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # keep test output clean
        pass

    def send_bytes(self, code: int, data: bytes, content_type: str = "application/json",
                   headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


class LoopbackServer:
    """A test server: ``serve`` answers with a handler class from a daemon thread (each request
    on a daemon thread of its own, ThreadingHTTPServer's default), ``stop`` ends it."""

    http: ThreadingHTTPServer

    def serve(self, handler: type[BaseHTTPRequestHandler]) -> str:
        """Start answering; the server's root URL (``http://127.0.0.1:<port>``)."""
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.http.server_address[1]}"

    def stop(self) -> None:
        self.http.shutdown()
        self.http.server_close()
