"""Prompt layouts for multiple-choice questions: plain text or a chat, around the texts of a
prompt style (:mod:`.prompt_styles`: one object per style owns its decisions).

Two styles are built in:

``tmlu`` — the TMLU paper's format (Fig. 2 / Fig. 7), as in its evaluation code
(github.com/MiuLab/TMLU, template.py and tmlu_eval.py): a topic line, then for each shot
``問題：{q}\\n(A) …\\n(B) …`` followed by ``\\n正確答案：({x})`` — or for CoT by
``\\n讓我們一步一步思考。\\n{explanation}\\n正確答案：({x})`` — shots joined by a blank line.
The query ends with the answer cue ``\\n正確答案：(`` (direct) or ``\\n讓我們一步一步思考。\\n`` (CoT),
so the next token is the option letter.

``lm-eval`` — lm-evaluation-harness's task formats, reproduced exactly so our numbers can be
checked against theirs: ``description + shot + "\\n\\n" + … + query``, each shot
``doc_to_text + " " + letter``, the candidates `` A``, `` B``, … (target delimiter " ").
  - cmmlu:     ``以下是关于{中文名}的单项选择题，请直接给出正确答案的选项。`` / ``{q}\\nA. {a}…\\n答案：``
  - tmlu, tmmluplus, custom: ``以下為{name}的單選題，請提供正確答案的選項。`` / ``{q}\\nA. {a}…\\nAnswer:``

Chat (``chat="single"``): the whole few-shot text is one user turn and the answer cue becomes an
assistant prefill (the TMLU code's ``apply_chat_template`` path). ``chat="multi"``: each shot is a
user turn (question) and an assistant turn (its answer); the query is the last user turn.
``chat="api"`` (``tmlu`` style only, for chat-only servers that ignore a prefill): the layout the
TMLU code sends to OpenAI-compatible APIs (MiuLab/TMLU template.py ``openai_template``,
tmlu_eval.py's openai branch, model.py ``OpenAI_LM.query``) — the whole text, answer cue included,
is one user message, followed by an empty assistant message.
An optional system prompt comes first. With the ``lm-eval`` style, as lm-evaluation-harness does
with a chat template (lm_eval/api/task.py ``fewshot_context``, ``multiturn_to_singleturn``): the
task description goes in the system message (after ``--system`` and a blank line, when given),
and the candidates lose their leading space (``target_delimiter`` becomes "").
"""

from __future__ import annotations

from typing import Literal, get_args

from ..backends.base import Message, Prompt
from ..data.items import MCQItem
from .prompt_styles import PromptConfig

ChatMode = Literal["none", "single", "multi", "api"]
CHAT_MODES: tuple[ChatMode, ...] = get_args(ChatMode)


def build_prompt(item: MCQItem, shots: list[MCQItem], subject_name: str,
                 config: PromptConfig) -> Prompt:
    """The prompt for ``item`` with ``shots`` as demonstrations (already chosen and trimmed)."""
    style = config.kind
    head = style.head(subject_name, config)
    shot_texts = [style.shot(s, config) for s in shots]
    query, cue = style.question(item, config), style.cue(config)

    if config.chat == "none":
        text = head + "".join(s + "\n\n" for s in shot_texts) + query + cue
        if config.system:
            text = config.system + "\n\n" + text
        return text

    messages: list[Message] = []
    if style.instruction_in_system:  # the description is the system message (lm-eval)
        messages.append({"role": "system", "content": _join(config.system, head)})
        head = ""
    elif config.system:
        messages.append({"role": "system", "content": config.system})
    if config.chat in ("single", "api"):
        text = head + "".join(s + "\n\n" for s in shot_texts) + query
        if config.chat == "api":
            # Our own code for the layout of MiuLab/TMLU template.py ``openai_template`` with
            # ``include_ans=False`` and model.py ``OpenAI_LM.query`` (prefill ''): the cue ends
            # the user text, and the assistant message after it is empty. The backends read a
            # final assistant message as a prefill, so an empty one is the bare generation
            # prompt.
            return [*messages, {"role": "user", "content": text + cue},
                    {"role": "assistant", "content": ""}]
        messages.append({"role": "user", "content": text})
    else:
        messages += _multi_turn(head, shots, shot_texts, query, config)
    if cue:  # kept verbatim, leading newline included, as the TMLU code appends it
        messages.append({"role": "assistant", "content": cue})
    return messages


def _join(prefix: str | None, suffix: str) -> str:
    """lm-eval's ``maybe_delimit`` with its few-shot delimiter: a blank line between the two
    unless one already has whitespace at the seam."""
    if not prefix:
        return suffix
    if prefix[-1].isspace() or suffix[0].isspace():
        return prefix + suffix
    return prefix + "\n\n" + suffix


def _multi_turn(head: str, shots: list[MCQItem], shot_texts: list[str], query: str,
                config: PromptConfig) -> list[Message]:
    """One user turn (question) and one assistant turn (its answer) per shot, then the query;
    the instruction rides on the first user turn."""
    messages: list[Message] = []
    for i, shot in enumerate(shots):
        question = config.kind.question(shot, config)
        answer = shot_texts[i][len(question):].strip()
        messages.append({"role": "user", "content": (head if i == 0 else "") + question})
        messages.append({"role": "assistant", "content": answer})
    messages.append({"role": "user", "content": (head if not shots else "") + query})
    return messages
