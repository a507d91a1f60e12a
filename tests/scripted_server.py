"""A loopback OpenAI-compatible server whose replies a test writes by hand (no model): what
``/v1/models`` answers, and for each POST to ``/v1/completions`` or ``/v1/chat/completions``
the exact bytes of the reply (``reply(path, body) -> bytes``), so a test can send what no real
server would: NaN, strings for numbers, wrong shapes. Other paths (vLLM's /tokenize) are 404,
so candidates are looked up by their whole text."""

from __future__ import annotations

import json
from collections.abc import Callable

from quiet_handler import LoopbackServer, QuietHandler


def top_logprobs_reply(top: dict | str) -> bytes:
    """A completions reply whose first position's top log-probs are ``top`` (a dict, dumped
    with Python's json, so NaN and Infinity come out bare as a lax server writes them; or the
    raw JSON text of it)."""
    text = top if isinstance(top, str) else json.dumps(top)
    return ('{"choices": [{"index": 0, "text": "A", "logprobs": {"top_logprobs": ['
            + text + ']}}]}').encode()


class ScriptedServer(LoopbackServer):
    def __init__(self, reply: Callable[[str, dict], bytes], models: bytes | None = None):
        self.reply, self.models = reply, models
        self.posts: list[tuple[str, dict]] = []
        server = self

        class Handler(QuietHandler):
            def _send(self, code: int, data: bytes) -> None:
                self.send_bytes(code, data)

            def do_GET(self):
                if self.path != "/v1/models":
                    return self._send(404, b'{"error": "not found"}')
                self._send(200, server.models if server.models is not None else
                           b'{"data": [{"id": "m", "max_model_len": 4096}]}')

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if not self.path.startswith("/v1/"):
                    return self._send(404, b'{"error": "not found"}')
                server.posts.append((self.path, body))
                self._send(200, server.reply(self.path, body))

        self.url = self.serve(Handler) + "/v1"

    def __enter__(self) -> ScriptedServer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class TokenizingServer(ScriptedServer):
    """A :class:`ScriptedServer` that also has vLLM's ``POST /tokenize`` (``{"prompt": …}`` or
    ``{"messages": …}`` -> ``{"count", "tokens"}``), by ``tokenizer`` (a transformers one)."""

    def __init__(self, reply: Callable[[str, dict], bytes], tokenizer,
                 models: bytes | None = None):
        self.tokenizer = tokenizer
        super().__init__(reply, models)

    def serve(self, handler):
        server = self
        posted = handler.do_POST

        class Tokenizing(handler):
            def do_POST(self):
                if self.path != "/tokenize":
                    return posted(self)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                tok = server.tokenizer
                if "messages" in body:
                    ids = tok.apply_chat_template(body["messages"], tokenize=True,
                                                  add_generation_prompt=True)
                else:
                    ids = tok(body["prompt"], add_special_tokens=body.get(
                        "add_special_tokens", True))["input_ids"]
                self._send(200, json.dumps({"count": len(ids), "tokens": list(ids),
                                            "max_model_len": 4096}).encode())

        return super().serve(Tokenizing)
