"""``--chat api``: the layout the TMLU code sends to OpenAI-compatible chat APIs (MiuLab/TMLU
07200b3, template.py ``openai_template`` and model.py ``OpenAI_LM.query``): the answer cue at
the end of the user message, then an empty assistant message. The expected lists below are
written by hand from that layout (the upstream example: one shot, direct and CoT)."""

import json

import pytest

from localeval.cli import main
from localeval.data.items import MCQItem
from localeval.tasks.prompts import PromptConfig, build_prompt

SHOT = MCQItem(id="s1", subject="s", question="1+1=?", options=("1", "2", "3", "4"),
               answer="B", explanation="1加1等於2。")
QUERY = MCQItem(id="q1", subject="s", question="2+2=?", options=("3", "4", "5", "6"),
                answer="B")


def test_direct_messages_as_miulab_sends_them_to_openai():
    got = build_prompt(QUERY, [SHOT], "x", PromptConfig(style="tmlu", shots=1, chat="api"))
    assert got == [
        {'role': 'user', 'content': '以下選擇題為出自臺灣的考題，答案為其中一個選項。\n\n問題：1+1=?\n(A) 1\n(B) 2\n(C) 3\n(D) 4\n正確答案：(B)\n\n問題：2+2=?\n(A) 3\n(B) 4\n(C) 5\n(D) 6\n正確答案：('},  # noqa: E501
        {'role': 'assistant', 'content': ''},
    ]


def test_cot_messages_as_miulab_sends_them_to_openai():
    got = build_prompt(QUERY, [SHOT], "x",
                       PromptConfig(style="tmlu", shots=1, cot=True, chat="api"))
    assert got == [
        {'role': 'user', 'content': '以下選擇題為出自臺灣的考題，答案為其中一個選項。\n\n問題：1+1=?\n(A) 1\n(B) 2\n(C) 3\n(D) 4\n讓我們一步一步思考。\n1加1等於2。\n正確答案：(B)\n\n問題：2+2=?\n(A) 3\n(B) 4\n(C) 5\n(D) 6\n讓我們一步一步思考。\n'},  # noqa: E501
        {'role': 'assistant', 'content': ''},
    ]


def test_user_text_is_the_plain_prompt_and_system_comes_first():
    """The user message is the --chat none string (what MiuLab sends Gemini, and its vLLM path
    without a chat template); --system, which MiuLab never sends, is a first message."""
    for cot in (False, True):
        plain = build_prompt(QUERY, [SHOT], "x", PromptConfig(shots=1, cot=cot))
        api = build_prompt(QUERY, [SHOT], "x",
                           PromptConfig(shots=1, cot=cot, chat="api", system="你是助理"))
        assert api == [{"role": "system", "content": "你是助理"},
                       {"role": "user", "content": plain},
                       {"role": "assistant", "content": ""}]


def _run(argv, out):
    from localeval.demo.mcq import SAMPLE_MCQ

    return main(["run", "--task", "tmlu", "--data", str(SAMPLE_MCQ), "--subjects",
                 "CAP_mathematics", "--limit", "2", "--max-tokens", "4", "--chat", "api",
                 "--method", "generation", "--output", str(out), "--quiet", *argv])


def _samples(out):
    return [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("cot", [False, True])
def test_cli_run_on_a_tiny_model(tmp_path, tiny_llama, cot):
    from localeval.backends.hf import HFBackend

    out = tmp_path / "run"
    assert _run(["--model", f"hf:{tiny_llama}"] + (["--cot"] if cot else []), out) == 0
    samples = _samples(out)
    assert len(samples) == 2
    cue = "\n讓我們一步一步思考。\n" if cot else "\n正確答案：("
    backend = HFBackend(str(tiny_llama))
    for s in samples:
        *rest, last = s["prompt"]
        assert last == {"role": "assistant", "content": ""}
        assert [m["role"] for m in rest] == ["user"] and rest[0]["content"].endswith(cue)
        assert "output" in s and s["extract"]
        # the empty prefill: the model answers right after the generation prompt
        text, _ = backend.render(s["prompt"])
        assert text == backend.tokenizer.apply_chat_template(rest, tokenize=False,
                                                             add_generation_prompt=True)
        assert text.endswith(cue + "<|im_end|>\n<|im_start|>assistant\n")


def test_the_empty_assistant_message_reaches_a_chat_server(tmp_path, tiny_llama):
    from openai_server import ModelServer

    server = ModelServer(tiny_llama)
    bodies, handle = [], server.handle

    def recording(path, body):
        bodies.append((path, body))
        return handle(path, body)
    server.handle = recording
    try:
        out = tmp_path / "remote"
        assert _run(["--model", "openai:tiny", "--base-url", server.url], out) == 0
    finally:
        server.stop()
    chats = [body for path, body in bodies if path.endswith("/chat/completions")]
    def key(messages):
        return json.dumps(messages, sort_keys=True, ensure_ascii=False)
    prompts = [s["prompt"] for s in _samples(out)]
    assert len(chats) == 2
    assert sorted(map(key, prompts)) == sorted(key(b["messages"]) for b in chats)
    for body in chats:
        assert body["messages"][-1] == {"role": "assistant", "content": ""}
        assert body["messages"][0]["content"].endswith("\n正確答案：(")
        # MiuLab model.py OpenAI_LM.query: model, messages, max_tokens, temperature; no stop
        # (issue 50 item 1). This server reports max_model_len, so it is taken for vLLM and is
        # also sent the pinned date its chat template prints (issue 49 item 3), nothing else.
        assert body.pop("chat_template_kwargs") == {"date_string": "26 Jul 2024"}
        assert set(body) == {"model", "messages", "max_tokens", "temperature"}
        assert "stop" not in body and body["max_tokens"] == 4 and body["temperature"] == 0


@pytest.mark.parametrize("argv, words", [
    ([], "--chat api needs --method generation"),
    (["--method", "generation", "--prompt-style", "lm-eval"], "use it with --prompt-style tmlu"),
])
def test_refusals_are_one_line_before_any_model_loads(argv, words, model_folder, no_model_load,
                                                      capsys):
    code = main(["run", "--task", "tmlu", "--model", model_folder, "--chat", "api", *argv])
    assert code == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


def test_chat_modes_are_the_flags_choices(capsys):
    assert main(["run", "--task", "tmlu", "--model", "hf:x", "--chat", "bogus"]) == 2
    assert "--chat must be one of none, single, multi, api, not 'bogus'" in \
        capsys.readouterr().err
