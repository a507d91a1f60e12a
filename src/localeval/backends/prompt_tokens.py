"""How a prompt becomes the tokens a local model sees, shared by the local backends (``hf:``
and ``vllm:``) so that both score and generate from the same ids: a chat prompt rendered with
the model's template (a final assistant message is a prefill), and a ScoreNext request split
into its context and each candidate's first token, the way lm-evaluation-harness splits them.

A template is given two things as vLLM's chat endpoint gives them, so that both local backends
render what the authors' vLLM server rendered: ``date_string``, the run's pinned date
(:data:`.config.DEFAULT_TEMPLATE_DATE`; Llama 3.1/3.3 templates print today's date without it),
and, for a template that loops over a message's content (Llama Guard 3 1B's), each message's
text as one ``{"type": "text"}`` part (vLLM ``entrypoints/chat_utils.py``
``_detect_content_format``: a loop over ``message['content']`` is its "openai" format).
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any, cast

from ..errors import LocalevalError
from .base import AFTER_TEMPLATE, Generate, Message, Prompt, ScoreNext
from .config import DEFAULT_TEMPLATE_DATE

if TYPE_CHECKING:  # imported by the backends that load a model (its import is slow)
    from transformers import PreTrainedTokenizerBase

# what a template that prints a date reads: transformers' clock, or the date it is given
DATE_READERS = re.compile(r"\bstrftime_now\b|\bdate_string\b")


def prints_date(tokenizer: PreTrainedTokenizerBase) -> bool:
    """Whether the tokenizer's chat template prints a date (so the run records the pinned one)."""
    return bool(DATE_READERS.search(str(getattr(tokenizer, "chat_template", None) or "")))


@functools.lru_cache(maxsize=8)
def reads_content_parts(template: str) -> bool:
    """Whether ``template`` loops over a message's content (vLLM's "openai" content format)."""
    import jinja2
    from jinja2 import nodes

    try:
        tree = jinja2.Environment(extensions=["jinja2.ext.loopcontrols"]).parse(template)
    except jinja2.TemplateError:
        return False
    for loop in tree.find_all(nodes.For):
        node = loop.iter
        # through filters and slices (``message['content'] | selectattr(...)``), as vLLM's
        # _is_var_or_elems_access; a call (``message.content.split()``) is not the parts
        while (isinstance(node, (nodes.Filter, nodes.Test)) or (
                isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Slice))) \
                and node.node is not None:
            node = node.node
        if isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const) and \
                node.arg.value == "content":
            return True
        if isinstance(node, nodes.Getattr) and node.attr == "content":
            return True
    return False


def _apply(tokenizer: PreTrainedTokenizerBase, messages: list[Message], generation: bool,
           date: str | None) -> str:
    """The chat template rendered as vLLM's chat endpoint renders it (see the module)."""
    parts = reads_content_parts(str(tokenizer.chat_template))
    chat: list[dict[str, object]] = [
        {"role": m["role"],
         "content": [{"type": "text", "text": m["content"]}] if parts else m["content"]}
        for m in messages]
    # casts: transformers types a message's content as str only, though its templates take a
    # list of parts (multimodal chat), and its return as any of its outputs, though
    # tokenize=False on one conversation is the rendered text
    return cast(str, tokenizer.apply_chat_template(
        cast(Any, chat), tokenize=False, add_generation_prompt=generation,
        date_string=date or DEFAULT_TEMPLATE_DATE))


def render(tokenizer: PreTrainedTokenizerBase, prompt: Prompt, model: str,
           date: str | None = None) -> tuple[str, bool]:
    """The text the model sees, and whether the tokenizer should add its special tokens.
    ``date``: the date a template prints (None: :data:`.config.DEFAULT_TEMPLATE_DATE`)."""
    if isinstance(prompt, str):
        return prompt, True
    if not getattr(tokenizer, "chat_template", None):
        raise LocalevalError(f"model {model!r} has no chat template (tokenizer_config.json "
                             "chat_template): drop --chat to use plain prompts, use an instruct "
                             "model, or give a guard one of its own templates (--guard-option "
                             "template=...)")
    messages, prefill = list(prompt), ""
    if messages and messages[-1]["role"] == AFTER_TEMPLATE:
        after = messages.pop()["content"]
        text = _apply(tokenizer, messages, False, date)
        return text + after, False  # the template already holds any BOS token
    if messages and messages[-1]["role"] == "assistant":
        prefill = messages.pop()["content"]
    text = _apply(tokenizer, messages, True, date)
    return text + prefill, False  # the template already holds any BOS token


def generation_text(tokenizer: PreTrainedTokenizerBase, request: Generate, model: str,
                    date: str | None = None) -> tuple[str, bool]:
    """A Generate request's text and whether special tokens are added: :func:`render`'s, unless
    the request says (``Generate.add_special_tokens``)."""
    text, special = render(tokenizer, request.prompt, model, date)
    return text, special if request.add_special_tokens is None else request.add_special_tokens


def score_tokens(tokenizer: PreTrainedTokenizerBase, request: ScoreNext, model: str,
                 date: str | None = None) -> tuple[list[int], list[int]]:
    """Context ids and each candidate's first token id, split the way lm-evaluation-harness
    splits them: trailing spaces move from the context to the candidates (" A" is one token,
    "A" after a space is not), and the candidate token is read from tokenising context +
    candidate whole. Trailing newlines stay in the context: guard templates end in a blank
    line before the verdict, which is read after it. Where a candidate would merge with the
    prompt's last tokens (some tokenizers split "\\n\\n" differently before a word), the
    prompt's own tokens are kept and the candidate's first token scored: what the model,
    generating, would be choosing between."""
    text, special = render(tokenizer, request.prompt, model, date)
    special = special and request.add_special_tokens
    stripped = text.rstrip(" \t")
    moved = text[len(stripped):]
    texts = [stripped] + [stripped + moved + cand for cand in request.candidates]
    ids: list[list[int]] = tokenizer(texts, add_special_tokens=special)["input_ids"]
    context, *wholes = ids
    targets: list[int] = []
    for cand, whole in zip(request.candidates, wholes):
        if len(whole) > len(context) and whole[: len(context)] == context:
            targets.append(whole[len(context)])
        else:
            own: list[int] = tokenizer(moved + cand, add_special_tokens=False)["input_ids"]
            if not own:
                raise LocalevalError(f"candidate {cand!r} has no tokens")
            targets.append(own[0])
    if len(set(targets)) != len(targets):
        raise LocalevalError(f"candidates {request.candidates} share a first token; "
                             "likelihood reads one token per option")
    if request.max_length is not None:  # MiuLab model.py encode_pair: the left cut, after
        context = context[-(request.max_length - 1):]  # the letter's tokens were split off
    return context, targets
