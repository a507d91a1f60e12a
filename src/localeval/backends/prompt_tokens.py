"""How a prompt becomes the tokens a local model sees, shared by the local backends (``hf:``
and ``vllm:``) so that both score and generate from the same ids: a chat prompt rendered with
the model's template (a final assistant message is a prefill), and a ScoreNext request split
into its context and each candidate's first token, the way lm-evaluation-harness splits them.
"""

from __future__ import annotations

from ..errors import LocalevalError
from .base import AFTER_TEMPLATE, Prompt, ScoreNext


def render(tokenizer, prompt: Prompt, model: str) -> tuple[str, bool]:
    """The text the model sees, and whether the tokenizer should add its special tokens."""
    if isinstance(prompt, str):
        return prompt, True
    if not getattr(tokenizer, "chat_template", None):
        raise LocalevalError(f"model {model!r} has no chat template; drop --chat to use plain "
                             "prompts, or use an instruct model")
    messages, prefill = list(prompt), ""
    if messages and messages[-1]["role"] == AFTER_TEMPLATE:
        after = messages.pop()["content"]
        text = tokenizer.apply_chat_template(messages, tokenize=False,
                                             add_generation_prompt=False)
        return text + after, False  # the template already holds any BOS token
    if messages and messages[-1]["role"] == "assistant":
        prefill = messages.pop()["content"]
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return text + prefill, False  # the template already holds any BOS token


def generation_text(tokenizer, request, model: str) -> tuple[str, bool]:
    """A Generate request's text and whether special tokens are added: :func:`render`'s, unless
    the request says (``Generate.add_special_tokens``)."""
    text, special = render(tokenizer, request.prompt, model)
    return text, special if request.add_special_tokens is None else request.add_special_tokens


def score_tokens(tokenizer, request: ScoreNext, model: str) -> tuple[list[int], list[int]]:
    """Context ids and each candidate's first token id, split the way lm-evaluation-harness
    splits them: trailing spaces move from the context to the candidates (" A" is one token,
    "A" after a space is not), and the candidate token is read from tokenising context +
    candidate whole. Trailing newlines stay in the context: guard templates end in a blank
    line before the verdict, which is read after it. Where a candidate would merge with the
    prompt's last tokens (some tokenizers split "\\n\\n" differently before a word), the
    prompt's own tokens are kept and the candidate's first token scored: what the model,
    generating, would be choosing between."""
    text, special = render(tokenizer, request.prompt, model)
    special = special and request.add_special_tokens
    stripped = text.rstrip(" \t")
    moved = text[len(stripped):]
    texts = [stripped] + [stripped + moved + cand for cand in request.candidates]
    context, *wholes = tokenizer(texts, add_special_tokens=special)["input_ids"]
    targets = []
    for cand, whole in zip(request.candidates, wholes):
        if len(whole) > len(context) and whole[: len(context)] == context:
            targets.append(whole[len(context)])
        else:
            own = tokenizer(moved + cand, add_special_tokens=False)["input_ids"]
            if not own:
                raise LocalevalError(f"candidate {cand!r} has no tokens")
            targets.append(own[0])
    if len(set(targets)) != len(targets):
        raise LocalevalError(
            f"candidates {request.candidates} share a first token; ScoreNext reads one position"
        )
    if request.max_length is not None:  # MiuLab model.py encode_pair: the left cut, after
        context = context[-(request.max_length - 1):]  # the letter's tokens were split off
    return context, targets
