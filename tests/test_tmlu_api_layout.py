"""``--chat api``: the layout the TMLU code sends to OpenAI-compatible chat APIs (MiuLab/TMLU
07200b3, template.py ``openai_template`` and model.py ``OpenAI_LM.query``): the answer cue at
the end of the user message, then an empty assistant message. The expected lists below are
written by hand from that layout (the upstream example: one shot, direct and CoT)."""

import json

import pytest

from localeval import evaluate
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


def test_chat_api_layout_runs_on_a_server_that_refuses_vllm_arguments(tmp_path, tiny_llama):
    """MiuLab model.py OpenAI_LM.query sends [user, assistant ""] as ordinary messages; an
    OpenAI server refuses continue_final_message/add_generation_prompt with HTTP 400."""
    import json

    from openai_server import ModelServer

    from localeval.cli import main
    from localeval.demo.mcq import SAMPLE_MCQ

    server = ModelServer(tiny_llama, openai_strict=True)
    bodies, handle = [], server.handle
    server.handle = lambda path, body: bodies.append(body) or handle(path, body)
    out = tmp_path / "run"
    try:
        code = main(["run", "--task", "tmlu", "--data", str(SAMPLE_MCQ), "--subjects",
                     "CAP_mathematics", "--limit", "2", "--max-tokens", "4", "--chat", "api",
                     "--method", "generation", "--model", "openai:tiny", "--base-url",
                     server.url, "--output", str(out), "--quiet"])
    finally:
        server.stop()
    samples = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    assert code == 0 and len(bodies) == 2
    assert not any(s.get("failed") for s in samples)
    assert all(b["messages"][-1] == {"role": "assistant", "content": ""} and
               "continue_final_message" not in b for b in bodies)


def test_a_prefill_goes_only_to_a_server_that_continues_it(tiny_llama):
    from openai_server import ModelServer

    from localeval.backends.base import Generate, error_of
    from localeval.backends.openai_compat import OpenAIBackend

    prefill = Generate([{"role": "user", "content": "Hi"},
                        {"role": "assistant", "content": "Verdict:"}], max_tokens=2)
    for strict, extensions, fails in ((True, None, True), (False, None, False),
                                      (True, "none", True), (False, "none", True)):
        server = ModelServer(tiny_llama, openai_strict=strict)
        try:
            backend = OpenAIBackend("tiny", base_url=server.url, chat_extensions=extensions)
            (out,) = backend.run([prefill])
        finally:
            server.stop()
        assert backend.identity["chat_extensions"] == ("none" if strict or extensions else
                                                       "vllm")
        if fails:  # never sent: one reason, not the server's 400
            assert "continue_final_message" in error_of(out) and not server.received
        else:
            assert error_of(out) is None and server.received[0].endswith("Verdict:")


# A reply that runs on into a new question (issue 50 item 1), gold A.
RUNAWAY = "這題要看選項的內容\n\n問題：下列何者正確？\n(A) 甲\n(B) 乙"


def _one_question(folder):
    folder.mkdir(exist_ok=True)
    row = {"id": "q1", "question": "哪一個？", "A": "甲", "B": "乙", "C": "丙", "D": "丁",
           "answer": "A"}
    (folder / "CAP_mathematics_test.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n",
                                         encoding="utf-8")
    (folder / "CAP_mathematics_dev.jsonl").write_text("", encoding="utf-8")
    return folder


def _chat_reply(text: str) -> bytes:
    return json.dumps({"choices": [{"index": 0, "message": {"role": "assistant",
                                                            "content": text},
                                    "finish_reason": "stop"}]}, ensure_ascii=False).encode()


def _served(body: dict) -> str:
    """What a server sends back: the reply, cut where the request's stop strings say."""
    text = RUNAWAY
    for stop in body.get("stop") or []:
        text = text.split(stop)[0]
    return text


def _api_run(tmp_path, **options):
    from scripted_server import ScriptedServer

    with ScriptedServer(lambda path, body: _chat_reply(_served(body))) as server:
        record = evaluate(task="tmlu", model="openai:m", data=_one_question(tmp_path / "d"),
                          shots=0, method="generation", chat="api",
                          output=tmp_path / "run", quiet=True, store=False,
                          backend_options={"base_url": server.url, "max_retries": 0},
                          **options)
    bodies = [b for p, b in server.posts if p.endswith("/chat/completions")]
    return record, bodies


def test_chat_api_sends_no_stop_and_reads_the_whole_reply_as_miulab(tmp_path):
    """MiuLab model.py OpenAI_LM.query: chat.completions.create(model, messages, max_tokens=128,
    temperature) -- no stop. utils.py check_ans on RUNAWAY: split on "\\n\\n" -> ["這題要看選項的
    內容", "問題：下列何者正確？\\n(A) 甲\\n(B) 乙"]; the first chunk has no 正確 and no A-E, so
    is_ans_format is False and the last chunk is read; its first "X)" is "A)": A, the gold."""
    record, bodies = _api_run(tmp_path)
    assert len(bodies) == 1 and "stop" not in bodies[0] and bodies[0]["max_tokens"] == 128
    [sample] = record.samples
    assert sample["output"] == RUNAWAY
    assert sample["pred"] == "A" and sample["correct"]
    assert record.config["stop_at"] == "budget"


def test_stop_at_question_is_ours_and_leaves_the_runaway_reply_unanswered(tmp_path):
    """--stop-at question (ours, saves tokens): the server stops at 問題：, the reply is
    "這題要看選項的內容\\n\\n", whose one chunk has no letter A-F: no answer, wrong."""
    record, bodies = _api_run(tmp_path, stop_at="question")
    assert bodies[0]["stop"] == ["問題："]
    [sample] = record.samples
    assert sample["pred"] is None and not sample["correct"]
    assert record.config["stop_at"] == "question"


def test_a_chat_api_folder_from_fidelity_3_is_a_run_with_other_settings(tmp_path):
    from localeval.errors import LocalevalError

    record, _ = _api_run(tmp_path)
    config_file = tmp_path / "run" / "config.json"
    config = json.loads(config_file.read_text(encoding="utf-8"))
    assert config["protocol"] == "fidelity-4"
    old = {k: v for k, v in config.items() if k != "stop_at"}
    config_file.write_text(json.dumps({**old, "protocol": "fidelity-3"}), encoding="utf-8")
    with pytest.raises(LocalevalError, match="holds a run with other settings") as e:
        _api_run(tmp_path)
    assert "protocol: 'fidelity-3' -> 'fidelity-4'" in str(e.value)
