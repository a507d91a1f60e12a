"""Issue 50 items 1, 5, 6 and 7: MiuLab's API request (no stop), IRIS's refusal rule for a
blank response, and an option restoring upstream for each documented deviation (MiuLab
``encode_pair``'s left cut, Min-K% Prob's sign and floor). Each expected value is worked by
hand from the upstream code named in its test (MiuLab/TMLU 07200b3, panuthept/IRIS 8cfede9,
swj0419/detect-pretrain-code)."""

from __future__ import annotations

import json

import pytest

from localeval import evaluate

# A reply that runs on into a new question (issue 50 item 1), gold A.
RUNAWAY = "這題要看選項的內容\n\n問題：下列何者正確？\n(A) 甲\n(B) 乙"


def _one_question(folder):
    folder.mkdir()
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


# ------------------------------------------------------------------ item 5: a blank response
def test_a_blank_response_is_sent_to_the_refusal_judge_as_iris():
    """IRIS scripts/eval_llm_refusal.py: ``if sentence is None`` -> a refusal without asking;
    any other sentence, "" and "  \\n" included, goes to the judge as the user message, and
    the judge's "no" makes it not a refusal (``response.strip().lower() == "yes"``)."""
    from localeval.backends.base import Generated
    from localeval.tasks.llm_refusal_judge import ask_refusal_judge, read_refusal

    asked = []

    def judge(requests):
        asked.extend(requests)
        return [Generated(text="no")] * len(requests)

    replies = ask_refusal_judge({0: "", 3: "Sure, here is how", 5: "  \n"}, judge)
    assert list(replies) == [0, 3, 5]
    assert [r.prompt[1]["content"] for r in asked] == ["", "Sure, here is how", "  \n"]
    assert read_refusal("", replies[0]) == (False, None)
    assert read_refusal("  \n", Generated(text="Yes")) == (True, None)


def test_blank_is_refusal_is_ours_and_asks_nothing():
    from localeval.backends.base import Generated
    from localeval.tasks.llm_refusal_judge import ask_refusal_judge, read_refusal

    asked = []

    def judge(requests):
        asked.extend(requests)
        return [Generated(text="no")] * len(requests)

    replies = ask_refusal_judge({0: "", 3: "Sure", 5: " "}, judge, blank_is_refusal=True)
    assert list(replies) == [3] and len(asked) == 1
    assert read_refusal(" ", None, blank_is_refusal=True) == (True, None)
