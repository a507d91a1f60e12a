"""A small OpenAI-compatible server on loopback for tests, in the shape vLLM serves.

It runs a real transformers model directly (no localeval code), so the openai backend is
tested against an independent implementation of the same protocol: /v1/models,
/v1/completions (``logprobs=k``, ``echo``), /v1/chat/completions (``logprobs``/``top_logprobs``,
``continue_final_message``), and vLLM's /tokenize and /detokenize (``tokenize=False``: a server
without them, as the hosted APIs are). It records the prompts it receives, in order.

``openai_strict=True`` answers as api.openai.com does where vLLM differs: ``/v1/models`` without
``max_model_len``, no tokenize endpoints, and HTTP 400 "Unrecognized request argument supplied"
for any body key outside OpenAI's documented request arguments (below, from the API reference of
chat.completions.create and completions.create).
"""

from __future__ import annotations

import json
import threading

from quiet_handler import LoopbackServer, QuietHandler

OPENAI_ARGS = {
    "/v1/chat/completions": {
        "model", "messages", "audio", "frequency_penalty", "function_call", "functions",
        "logit_bias", "logprobs", "max_completion_tokens", "max_tokens", "metadata",
        "modalities", "n", "parallel_tool_calls", "prediction", "presence_penalty",
        "reasoning_effort", "response_format", "seed", "service_tier", "stop", "store",
        "stream", "stream_options", "temperature", "tool_choice", "tools", "top_logprobs",
        "top_p", "user", "web_search_options"},
    "/v1/completions": {
        "model", "prompt", "best_of", "echo", "frequency_penalty", "logit_bias", "logprobs",
        "max_tokens", "n", "presence_penalty", "seed", "stop", "stream", "stream_options",
        "suffix", "temperature", "top_p", "user"},
}


class ModelServer(LoopbackServer):
    def __init__(self, model_dir, name="tiny", api_key=None, fail_first=0, tokenize=True,
                 openai_strict=False, max_logprobs=None, echo_after=False, list_fault=None,
                 tokenize_fault=None):
        import torch
        import transformers

        self.torch = torch
        self.tok = transformers.AutoTokenizer.from_pretrained(model_dir)
        self.model = transformers.AutoModelForCausalLM.from_pretrained(model_dir).eval()
        self.name, self.api_key, self.fail_left = name, api_key, fail_first
        self.strict = openai_strict
        self.max_logprobs = max_logprobs  # vLLM's --max-logprobs: more is refused, as vLLM does
        # echo reads each prompt token's log-prob from the distribution after it (what
        # llama-cpp-python does on a model without BOS): wrong, and no one reply shows it
        self.echo_after = echo_after
        # a list of prompts echoed wrong where one prompt is echoed right: "swapped" gives the
        # choices each other's ``index`` (the last prompt's echo as index 0, …); "after" reads
        # each log-prob from the distribution after its token (misaligned by one position)
        self.list_fault = list_fault
        # /tokenize disagreeing with the echo: "short" drops a prompt's last token, "bos" puts
        # a BOS first that the echo lacks
        self.tokenize_fault = tokenize_fault
        self.paths = {"/v1/completions", "/v1/chat/completions"} | (
            {"/tokenize", "/detokenize"} if tokenize and not openai_strict else set())
        self.received: list[str] = []
        self.posts: list[str] = []  # each POST's path: the HTTP requests, a list prompt once
        self._pieces: list[str] | None = None
        self.headers_seen: list[dict] = []
        self.lock = threading.Lock()
        server = self

        class Handler(QuietHandler):
            def _send(self, code, body):
                self.send_bytes(code, json.dumps(body).encode())

            def do_GET(self):
                if self.path.partition("?")[0] == "/v1/models" and server.strict:
                    self._send(200, {"object": "list", "data": [
                        {"id": server.name, "object": "model", "owned_by": "system"}]})
                elif self.path.partition("?")[0] == "/v1/models":  # routed by path, as servers do
                    self._send(200, {"data": [{"id": server.name, "max_model_len": 4096}]})
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.headers_seen.append(dict(self.headers))
                if server.api_key and self.headers.get("Authorization") != f"Bearer {server.api_key}":
                    return self._send(401, {"error": "bad key"})
                path = self.path.partition("?")[0]
                server.posts.append(path)
                if path not in server.paths:
                    return self._send(404, {"error": "not found"})
                unknown = sorted(set(body) - OPENAI_ARGS.get(self.path, set(body)))
                if server.strict and unknown:
                    return self._send(400, {"error": {
                        "message": f"Unrecognized request argument supplied: {unknown[0]}",
                        "type": "invalid_request_error", "param": None, "code": None}})
                refused = server.refusal(body)
                if refused:
                    return self._send(400, refused)
                with server.lock:
                    if server.fail_left > 0:
                        server.fail_left -= 1
                        return self._send(503, {"error": "warming up"})
                    try:
                        self._send(200, server.handle(path, body))
                    except KeyError as e:
                        self._send(400, {"error": f"missing {e}"})

        self.url = self.serve(Handler) + "/v1"

    def refusal(self, body):
        """vLLM's HTTP 400 for a top-k over its cap (vllm ``sampling_params.py``
        ``SamplingParams._validate_logprobs``), or None."""
        k = body.get("top_logprobs", body.get("logprobs"))
        if self.max_logprobs is None or isinstance(k, bool) or not isinstance(k, int) \
                or k <= self.max_logprobs:
            return None
        return {"error": {"message": f"Requested sample logprobs of {k}, which is greater "
                                     f"than max allowed: {self.max_logprobs}",
                          "type": "BadRequestError", "code": 400}}

    def _piece(self, token_id: int) -> str:
        """The text of one token (decoded once: full-vocabulary top-k replies stay fast)."""
        if self._pieces is None:
            self._pieces = [self.tok.decode([i]) for i in range(len(self.tok))]
        return self._pieces[token_id]


    def _text(self, path, body):
        if path.endswith("/chat/completions") or "messages" in body:
            msgs = body["messages"]
            kwargs = body.get("chat_template_kwargs") or {}  # vLLM's: e.g. date_string
            if "selectattr('type'" in str(self.tok.chat_template):
                # vLLM's "openai" content format: a template that reads content parts gets
                # each message's text as one
                msgs = [{**m, "content": [{"type": "text", "text": m["content"]}]} for m in msgs]
            if body.get("continue_final_message"):
                head = self.tok.apply_chat_template(msgs[:-1], tokenize=False,
                                                    add_generation_prompt=True, **kwargs)
                return head + msgs[-1]["content"], False
            return self.tok.apply_chat_template(
                msgs, tokenize=False, add_generation_prompt=body.get("add_generation_prompt", True),
                **kwargs), False
        return body["prompt"], body.get("add_special_tokens", True)  # vLLM's extra parameter

    def _echo(self, ids, by_id=False, index=0, after=None):
        """``echo`` with logprobs and max_tokens=1, as vLLM answers it: the prompt's token
        log-probs (null first), then the greedy next token's, each token named by its text or
        (``return_tokens_as_token_ids``) "token_id:<id>"; ``usage`` counts the prompt."""
        with self.torch.no_grad():
            lp = self.model(self.torch.tensor([ids])).logits[0].log_softmax(-1)
        shift = int(self.echo_after if after is None else after)
        values = [None] + [lp[i + shift, t].item() for i, t in enumerate(ids[1:])]
        nxt = int(lp[-1].argmax())
        tokens = [f"token_id:{t}" if by_id else self._piece(t) for t in [*ids, nxt]]
        return {"choices": [{"index": index, "text": "".join(tokens), "logprobs": {
            "tokens": tokens, "token_logprobs": values + [lp[-1, nxt].item()]}}],
            "usage": {"prompt_tokens": len(ids), "completion_tokens": 1}}

    def _echo_list(self, body, special):
        """A list of prompts echoed as vLLM answers it: a choice per prompt (its ``index``),
        the usage summed."""
        replies = []
        n = len(body["prompt"])
        for k, text in enumerate(body["prompt"]):
            self.received.append(text)
            ids = self.tok(text, add_special_tokens=special)["input_ids"]
            index = n - 1 - k if self.list_fault == "swapped" else k
            replies.append(self._echo(ids, body.get("return_tokens_as_token_ids"), index,
                                      self.echo_after or self.list_fault == "after"))
        return {"choices": [r["choices"][0] for r in replies], "usage": {
            "prompt_tokens": sum(r["usage"]["prompt_tokens"] for r in replies),
            "completion_tokens": len(replies)}}

    def handle(self, path, body):
        torch = self.torch
        if path == "/tokenize":  # vLLM's shape (its tokenizer's decode names a token)
            text, special = self._text(path, body)
            ids = self.tok(text, add_special_tokens=special)["input_ids"]
            if self.tokenize_fault == "short" and len(ids) > 3:  # a prompt's, not a label's
                ids = ids[:-1]
            elif self.tokenize_fault == "bos":
                ids = [self.tok.bos_token_id or 0, *ids]
            return {"count": len(ids), "max_model_len": 4096, "tokens": ids}
        if path == "/detokenize":
            return {"prompt": self.tok.decode(body["tokens"])}
        text, special = self._text(path, body)
        chat = path.endswith("/chat/completions")
        if isinstance(text, list) and body.get("echo") and not chat:
            return self._echo_list(body, special)
        self.received.append(text)
        ids = self.tok(text, add_special_tokens=special)["input_ids"]
        k = body.get("top_logprobs") if chat else body.get("logprobs")
        if body.get("echo") and not chat:
            return self._echo(ids, body.get("return_tokens_as_token_ids"))
        with torch.no_grad():
            if body["max_tokens"] == 1 and k:
                lp = self.model(torch.tensor([ids])).logits[0, -1].log_softmax(-1)
                values, idx = lp.topk(k)
                # vLLM's return_tokens_as_token_ids names each token "token_id:<id>"
                name = (lambda i: f"token_id:{i}") if body.get("return_tokens_as_token_ids") \
                    else self._piece
                top = {name(i): v for i, v in zip(idx.tolist(), values.tolist())}
                first = name(idx[0].item())
                if chat:
                    entry = {"token": first, "logprob": values[0].item(),
                             "top_logprobs": [{"token": t, "logprob": v} for t, v in top.items()]}
                    return {"choices": [{"message": {"content": first},
                                         "logprobs": {"content": [entry]}}]}
                return {"choices": [{"text": first, "logprobs": {"top_logprobs": [top]}}]}
            out = self.model.generate(torch.tensor([ids]), max_new_tokens=body["max_tokens"],
                                      do_sample=False, pad_token_id=self.tok.pad_token_id)
            text_out = self.tok.decode(out[0, len(ids):], skip_special_tokens=True)
            for s in body.get("stop") or []:
                if s in text_out:
                    text_out = text_out[: text_out.index(s)]
            if chat:
                return {"choices": [{"message": {"content": text_out}}]}
            return {"choices": [{"text": text_out}]}
