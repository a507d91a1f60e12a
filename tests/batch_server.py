"""A loopback server with the OpenAI Batch API's routes, for the ``--batch`` tests: ``POST
/v1/files`` (multipart, ``purpose=batch``), ``POST /v1/batches``, ``GET /v1/batches/{id}``,
``GET /v1/files/{id}/content``, and ``GET /v1/models``. Each line of a batch is answered by a
real model (:class:`openai_server.ModelServer`'s ``handle``, the replies vLLM would give), in
the shapes of the API reference (output rows ``{"custom_id", "response": {"status_code",
"body"}, "error"}``).

``mode`` says how a batch ends: ``complete``; ``half`` (the second half of the rows in the error
file, HTTP 500: the client sends a question's rows together, so whole questions fail); ``expire`` (the first half answered, then ``expired``); ``hold`` (in progress until
``mode`` changes); ``twice`` (every row of the output file a second time, its line answered
again). Each batch reports ``in_progress`` once before it ends, so the client polls.
"""

from __future__ import annotations

import itertools
import json
import threading
from email.parser import BytesParser

from quiet_handler import LoopbackServer, QuietHandler


class BatchServer(LoopbackServer):
    def __init__(self, model_server, name: str = "tiny", mode: str = "complete"):
        self.model, self.name, self.mode = model_server, name, mode
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.uploads = self.creates = 0
        self.ids = itertools.count(1)
        self.lock = threading.Lock()
        server = self

        class Handler(QuietHandler):
            def _send(self, code: int, body, raw: bool = False):
                self.send_bytes(code, body if raw else json.dumps(body).encode())

            def do_GET(self):
                path = self.path.partition("?")[0]
                with server.lock:
                    if path == "/v1/models":
                        return self._send(200, {"data": [{"id": server.name}]})
                    parts = path.strip("/").split("/")
                    if parts[:2] == ["v1", "batches"] and parts[2] in server.batches:
                        return self._send(200, server.poll(parts[2]))
                    if parts[:2] == ["v1", "files"] and parts[-1] == "content" \
                            and parts[2] in server.files:
                        return self._send(200, server.files[parts[2]], raw=True)
                self._send(404, {"error": {"message": "not found"}})

            def do_POST(self):
                path = self.path.partition("?")[0]
                data = self.rfile.read(int(self.headers["Content-Length"]))
                with server.lock:
                    if path == "/v1/files":
                        return self._send(200, server.upload(self.headers["Content-Type"], data))
                    if path == "/v1/batches":
                        return self._send(200, server.create(json.loads(data)))
                self._send(404, {"error": {"message": "not found"}})

        self.url = self.serve(Handler) + "/v1"

    def _new_file(self, data: bytes) -> str:
        file_id = f"file-{next(self.ids)}"
        self.files[file_id] = data
        return file_id

    def upload(self, content_type: str, data: bytes) -> dict:
        message = BytesParser().parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + data)
        fields = {part.get_param("name", header="content-disposition"): part.get_payload(
            decode=True) for part in message.get_payload()}
        assert fields["purpose"] == b"batch", fields["purpose"]
        self.uploads += 1
        return {"id": self._new_file(fields["file"]), "object": "file", "purpose": "batch"}

    def create(self, body: dict) -> dict:
        assert body["completion_window"] == "24h"
        self.creates += 1
        lines = [json.loads(x) for x in self.files[body["input_file_id"]].splitlines()]
        assert all(line["url"] == body["endpoint"] for line in lines)
        batch_id = f"batch_{next(self.ids)}"
        self.batches[batch_id] = {"id": batch_id, "object": "batch", "status": "validating",
                                  "endpoint": body["endpoint"], "lines": lines, "polls": 0}
        return self.poll(batch_id, count=False)

    def poll(self, batch_id: str, count: bool = True) -> dict:
        batch = self.batches[batch_id]
        if count:
            batch["polls"] += 1
        if batch["status"] in ("validating", "in_progress") and batch["polls"] >= 2 \
                and self.mode != "hold":
            self._finish(batch)
        elif batch["polls"] >= 1 and batch["status"] == "validating":
            batch["status"] = "in_progress"
        return {k: v for k, v in batch.items() if k not in ("lines", "polls")}

    def _finish(self, batch: dict) -> None:
        out, errors = [], []
        lines = batch["lines"]
        for k, line in enumerate(lines):
            if self.mode == "expire" and k >= len(lines) // 2:
                continue
            row = {"id": f"req_{k}", "custom_id": line["custom_id"], "error": None}
            if self.mode == "half" and k >= len(lines) // 2:
                row["response"] = {"status_code": 500, "body": {"error": {
                    "message": "The server had an error processing your request"}}}
                errors.append(row)
                continue
            reply = self.model.handle(line["url"], line["body"])
            row["response"] = {"status_code": 200, "body": reply}
            out.append(row)
        if self.mode == "twice":
            out += [{**row, "response": {"status_code": 200, "body": self.model.handle(
                line["url"], line["body"])}} for row, line in zip(out, lines, strict=True)]
        batch["status"] = "expired" if self.mode == "expire" else "completed"
        for key, rows in (("output_file_id", out), ("error_file_id", errors)):
            if rows:
                batch[key] = self._new_file(
                    "".join(json.dumps(r) + "\n" for r in rows).encode())
