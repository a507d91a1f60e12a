import pytest

from localeval.data.items import MCQItem
from localeval.tasks import extract
from localeval.tasks.prompts import PromptConfig, build_prompt


def item(q, opts, ans, expl=None, subject="s"):
    return MCQItem(id=q, subject=subject, question=q, options=tuple(opts), answer=ans,
                   explanation=expl)


SHOT = item("一加一等於幾？", ["1", "2", "3", "4"], "B", "一加一為二。")
QUERY = item("二加二\n\n等於幾？ ", ["3", "4", "5", "6", "7"], "B")


def test_tmlu_direct():
    got = build_prompt(QUERY, [SHOT], "會考數學", PromptConfig(style="tmlu", shots=1))
    assert got == (
        "以下選擇題為出自臺灣的考題，答案為其中一個選項。\n\n"
        "問題：一加一等於幾？\n(A) 1\n(B) 2\n(C) 3\n(D) 4\n正確答案：(B)\n\n"
        "問題：二加二\n等於幾？\n(A) 3\n(B) 4\n(C) 5\n(D) 6\n(E) 7\n正確答案：("
    )
    assert PromptConfig(style="tmlu").candidates(QUERY) == ("A", "B", "C", "D", "E")


def test_tmlu_cot():
    got = build_prompt(QUERY, [SHOT], "x", PromptConfig(style="tmlu", shots=1, cot=True))
    assert got == (
        "以下選擇題為出自臺灣的考題，答案為其中一個選項。\n\n"
        "問題：一加一等於幾？\n(A) 1\n(B) 2\n(C) 3\n(D) 4\n讓我們一步一步思考。\n一加一為二。\n正確答案：(B)\n\n"
        "問題：二加二\n等於幾？\n(A) 3\n(B) 4\n(C) 5\n(D) 6\n(E) 7\n讓我們一步一步思考。\n"
    )


def test_lm_eval_cmmlu_and_tmlu():
    got = build_prompt(QUERY, [SHOT], "农学", PromptConfig(style="lm-eval", shots=1, task="cmmlu"))
    assert got == (
        "以下是关于农学的单项选择题，请直接给出正确答案的选项。\n\n"
        "一加一等於幾？\nA. 1\nB. 2\nC. 3\nD. 4\n答案： B\n\n"
        "二加二\n\n等於幾？\nA. 3\nB. 4\nC. 5\nD. 6\nE. 7\n答案："
    )
    got = build_prompt(QUERY, [], "會考數學", PromptConfig(style="lm-eval", shots=0, task="tmlu"))
    assert got == ("以下為會考數學的單選題，請提供正確答案的選項。\n\n"
                   "二加二\n\n等於幾？\nA. 3\nB. 4\nC. 5\nD. 6\nE. 7\nAnswer:")
    assert PromptConfig(style="lm-eval").candidates(SHOT) == (" A", " B", " C", " D")


def test_chat_single_turn_with_system_and_prefill():
    got = build_prompt(QUERY, [SHOT], "x", PromptConfig(shots=1, chat="single", system="你是助理"))
    assert got == [
        {"role": "system", "content": "你是助理"},
        {"role": "user", "content": "以下選擇題為出自臺灣的考題，答案為其中一個選項。\n\n"
         "問題：一加一等於幾？\n(A) 1\n(B) 2\n(C) 3\n(D) 4\n正確答案：(B)\n\n"
         "問題：二加二\n等於幾？\n(A) 3\n(B) 4\n(C) 5\n(D) 6\n(E) 7"},
        {"role": "assistant", "content": "\n正確答案：("},
    ]


def test_chat_multi_turn():
    got = build_prompt(QUERY, [SHOT], "x", PromptConfig(shots=1, chat="multi"))
    assert got == [
        {"role": "user", "content": "以下選擇題為出自臺灣的考題，答案為其中一個選項。\n\n"
         "問題：一加一等於幾？\n(A) 1\n(B) 2\n(C) 3\n(D) 4"},
        {"role": "assistant", "content": "正確答案：(B)"},
        {"role": "user", "content": "問題：二加二\n等於幾？\n(A) 3\n(B) 4\n(C) 5\n(D) 6\n(E) 7"},
        {"role": "assistant", "content": "\n正確答案：("},
    ]


@pytest.mark.parametrize("text, want", [
    ("B) 因為", "B"), (" (C)", "C"), ("（D）", "D"), ("A", "A"),
    ("Answer: A", None), ("E", None), ("AB", None), ("A1", None), ("", None), ("答案是A", None),
])
def test_direct_extraction_is_strict(text, want):
    pred, error = extract.from_direct_text(text, "ABCD")
    assert pred == want and (error is None) == (want is not None)


@pytest.mark.parametrize("text, want", [
    ("先算 A 的值……\n正確答案：(C)", "C"),
    ("答案：B。不對，重新計算。\n正確答案：(D)\n\n問題：下一題 正確答案：(A)", "D"),
    ("The answer is (b)", "B"),
    ("我不知道", None),
    ("正確答案：(F)", None),
])
def test_cot_extraction_takes_last_final_answer(text, want):
    pred, _ = extract.from_cot_text(text, "ABCDE")
    assert pred == want


def test_logprob_argmax_ties_take_first():
    assert extract.from_logprobs({"A": -1.0, "B": -0.5, "C": -0.5}, "ABC") == "B"


def test_item_validation():
    with pytest.raises(ValueError):
        item("q", ["only one"], "A")
    with pytest.raises(ValueError):
        item("q", ["a", "b"], "C")
