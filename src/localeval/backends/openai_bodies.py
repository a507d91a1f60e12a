"""The request bodies an OpenAI-compatible server is sent, and the chat extensions they may use.

- A plain prompt goes to ``/v1/completions``, a chat one to ``/v1/chat/completions``, greedy
  (``temperature`` 0) unless a generation samples (then the server's default sampling, as IRIS
  sends, with ``--seed``'s per-request seed).
- ScoreNext asks the top ``top_logprobs`` log-probs of the next token (or of each position up to
  a guard's labelled one, :mod:`.ranked_reading`); on a server read by token id, keyed by id.
- A final *empty* assistant message is sent as it is, as MiuLab/TMLU ``model.py``
  ``OpenAI_LM.query`` sends ``[user, assistant ""]``. A final assistant message with text is a
  prefill: it is continued with ``continue_final_message`` (vLLM's extension) only on a server
  known to accept it (``chat_extensions``: ``vllm``); api.openai.com refuses any argument outside
  its own set with HTTP 400, so elsewhere such a request fails alone (:class:`NoPrefill`).
- The date a chat template prints is pinned on vLLM (``chat_template_kwargs``); another chat
  server renders its own, and the run records that it was not (:data:`UNPINNED`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import LocalevalError
from .base import AFTER_TEMPLATE, Generate, Prompt, Request, ScoreNext, TextLogprobs, server_seed
from .ranked_reading import asked_per_position

Body = dict[str, Any]

PREFILL_REFUSED = ("the prompt ends with an assistant prefill, which only vLLM's "
                   "continue_final_message continues, and this server is not known to take it "
                   "(an OpenAI server refuses unknown arguments); pass --chat-extensions vllm "
                   "if it does, or use a prompt without a prefill (--chat api for TMLU)")

AFTER_TEMPLATE_REFUSED = ("the guard appends text after the model's chat template (SEA-LION "
                          "Guard's model header), which a chat server cannot be sent: run it "
                          "on hf: or vllm:")
OWN_TEMPLATE_REFUSED = ("the guard asks for the model's own chat template rendered as it is, "
                        "without a generation prompt (vLLM's add_generation_prompt), and this "
                        "server is not known to take it: pass --chat-extensions vllm if it "
                        "does, or give the guard a template of ours (--guard-option "
                        "template=hf)")
# what config.json records of a chat server that renders its own date (it takes no date_string)
UNPINNED = "not pinned: a chat server that takes no chat_template_kwargs renders its own date"
CHAT = "/chat/completions"
COMPLETIONS = "/completions"


class NoPrefill(LocalevalError):
    """A chat prompt with an assistant prefill for a server that cannot continue one."""

    permanent = True


def text_logprobs_body(model: str, request: TextLogprobs) -> Body:
    """A text's own token log-probs: ``/v1/completions`` with ``echo``."""
    return {"model": model, "prompt": request.text, "max_tokens": 1, "temperature": 0.0,
            "echo": True, "logprobs": 1}


@dataclass(frozen=True)
class Bodies:
    """How this server's requests are written: the served ``model``, ``top_logprobs`` asked,
    whether top log-probs come keyed by token id (``token_ids``), the ``chat_extensions`` it
    takes, and the ``template_date`` a vLLM chat template prints."""

    model: str
    top_logprobs: int
    token_ids: bool
    chat_extensions: str
    template_date: str

    def request(self, request: Request, read_to: int | None = None) -> tuple[str, Body]:
        """The path and JSON body of ``request``; ``read_to``: a ScoreNext's second,
        whole-vocabulary read, generating that many positions with --top-logprobs."""
        if isinstance(request, ScoreNext):
            return self.score_next(request, read_to)
        if isinstance(request, Generate):
            return self.generate(request)
        raise LocalevalError(f"the openai backend cannot run {type(request).__name__} requests")

    def score_next(self, request: ScoreNext, read_to: int | None = None) -> tuple[str, Body]:
        # ``positions``: greedy up to the guard authors' limit, read position by position
        # with the top k that finds the labelled one (:mod:`.ranked_reading`)
        path, body = self.prompt(request.prompt, max_tokens=read_to or request.positions or 1)
        top = self.top_logprobs if read_to else asked_per_position(request, self.top_logprobs)
        if self.token_ids:
            body["return_tokens_as_token_ids"] = True  # vLLM: top log-probs keyed by id
        if path == CHAT:
            body.update(logprobs=True, top_logprobs=top)
            return path, body
        body["logprobs"] = top
        if not request.add_special_tokens:
            body["add_special_tokens"] = False  # vLLM's extra parameter: no BOS
        return path, body

    def generate(self, request: Generate) -> tuple[str, Body]:
        path, body = self.prompt(request.prompt, max_tokens=request.max_tokens)
        if request.stop:
            body["stop"] = list(request.stop)
        if request.sample is not None or request.decoding is not None:
            del body["temperature"]  # the server's default sampling, as IRIS sends
            if (seed := server_seed(request)) is not None:
                body["seed"] = seed  # --seed: OpenAI's and vLLM's per-request seed
        return path, body

    def prompt(self, prompt: Prompt, **extra: Any) -> tuple[str, Body]:
        """The path and body of ``prompt`` (greedy, with ``extra``)."""
        body: Body = {"model": self.model, "temperature": 0.0, **extra}
        if isinstance(prompt, str):
            return COMPLETIONS, {**body, "prompt": prompt}
        body["messages"] = list(prompt)
        if self.chat_extensions == "vllm":
            body["chat_template_kwargs"] = {"date_string": self.template_date}
        last = prompt[-1] if prompt else None
        if last is not None and last["role"] == AFTER_TEMPLATE:
            return CHAT, self._own_template(body, last["content"])
        if last is not None and last["role"] == "assistant" and last["content"]:
            if self.chat_extensions != "vllm":
                raise NoPrefill(PREFILL_REFUSED)
            body.update(continue_final_message=True, add_generation_prompt=False)
        return CHAT, body

    def _own_template(self, body: Body, after: str) -> Body:
        """Nothing after the template (a guard's own template, Llama Guard 3's): the template
        rendered as it is, without a generation prompt; text after it cannot be sent."""
        if after:
            raise NoPrefill(AFTER_TEMPLATE_REFUSED)
        if self.chat_extensions != "vllm":
            raise NoPrefill(OWN_TEMPLATE_REFUSED)
        body["messages"] = body["messages"][:-1]
        body["add_generation_prompt"] = False
        return body
