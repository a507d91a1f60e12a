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


# ------------------------------------------------------------------ item 6: Min-K% upstream
def _scored(values, **options):
    from localeval.backends.base import TokenLogprobs
    from localeval.tasks.contamination import ContaminationTask, Text

    task = ContaminationTask(data=["x"], k=[20.0, 50.0], **options)
    return task.score(Text("t1", "x", None, "some text"), TokenLogprobs(token_logprobs=values))


def test_min_k_default_is_ours_at_least_one_token_and_the_mean_log_prob():
    """Ours (docs/fidelity.md, contamination): ⌊k% · n⌋ tokens, at least 1; the mean log-prob.
    Four token log-probs -1, -3, -2, -0.5: k=20 -> ⌊0.8⌋ = 0 -> 1 token: -3; k=50 -> 2 tokens,
    -3 and -2: -2.5."""
    sample = _scored([-1.0, -3.0, -2.0, -0.5])
    assert sample.min_k == {"20": -3.0, "50": -2.5}


def test_min_k_as_detect_pretrain_code():
    """swj0419/detect-pretrain-code src/run.py: k_length = int(len(all_prob) * ratio);
    topk_prob = np.sort(all_prob)[:k_length]; pred = -np.mean(topk_prob). The same four
    values: k=20 -> int(0.8) = 0 tokens, the mean of nothing (NaN: no score, None here);
    k=50 -> -mean(-3, -2) = 2.5."""
    sample = _scored([-1.0, -3.0, -2.0, -0.5], min_k_sign="negated", k_tokens="floor")
    assert sample.min_k == {"20": None, "50": 2.5}


def test_k_tokens_floor_leaves_a_text_without_a_score_out_of_that_k(tmp_path):
    """A text too short for k has no Min-K% there: out of that k's summary, the others kept."""
    from localeval.analysis.contamination import summarise_contamination
    from localeval.records.samples import ContaminationSample

    def s(i, source, m):
        return ContaminationSample(id=i, source=source, n_tokens=4, min_k=m)

    samples = [s("a", "x", {"20": None, "50": 2.5}), s("b", "x", {"20": 4.0, "50": 3.0}),
               s("c", "y", {"20": 1.0, "50": 1.0})]
    out = summarise_contamination(samples, ["20", "50"], None, "localeval.contamination/1",
                                  sign="negated")
    assert out["sources"]["x"]["min_k"]["20"]["n"] == 1
    assert out["sources"]["x"]["min_k"]["50"]["median"] == 2.75
    assert out["median_gaps"]["y - x"]["min_k"] == {"20": -3.0, "50": -1.75}
    assert "negat" in out["sign"]


@pytest.mark.slow
def test_upstream_min_k_through_the_cli_on_a_tiny_model(tiny_llama, tmp_path, capsys):
    """--min-k-sign negated --k-tokens floor end to end: each Min-K% is minus ours, a text
    with fewer than 100/k scored tokens has none at k, ROC-AUC keeps its meaning (members more
    likely seen) and the tables say lower = more likely seen."""
    from localeval.cli import main

    texts = tmp_path / "texts.jsonl"
    rows = [("short", "台灣的首都是台北。"), ("two", "Hello there, my good friend"),
            ("long", "中華民國憲法第一條規定，中華民國為民主共和國。" * 3),
            ("en", "The quick brown fox jumps over the lazy dog.")]
    texts.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n"
                             for i, t in rows), encoding="utf-8")
    members = tmp_path / "members.csv"
    members.write_text("id,member\nshort,1\ntwo,0\nlong,1\nen,0\n")
    base = ["contamination", "--model", f"hf:{tiny_llama}", "--data", str(texts), "--k",
            "10,50", "--members", str(members), "--quiet"]
    assert main([*base, "--output", str(tmp_path / "ours")]) == 0
    assert main([*base, "--output", str(tmp_path / "up"), "--min-k-sign", "negated",
                 "--k-tokens", "floor"]) == 0
    printed = capsys.readouterr().out
    assert "Min-K% Prob: median (mean) per dataset; lower = more likely seen" in printed

    def read(name):
        lines = (tmp_path / name / "samples.jsonl").read_text(encoding="utf-8").splitlines()
        results = json.loads((tmp_path / name / "results.json").read_text(encoding="utf-8"))
        return {s["id"]: s for s in map(json.loads, lines)}, results

    ours, ours_results = read("ours")
    up, up_results = read("up")
    for i, s in up.items():
        n = s["n_tokens"]
        for k in ("10", "50"):
            if n * int(k) // 100 == 0:
                assert s["min_k"][k] is None and s["min_k_pp"][k] is None
            else:
                assert s["min_k"][k] == pytest.approx(-ours[i]["min_k"][k])
                assert s["min_k_pp"][k] == pytest.approx(ours[i]["min_k_pp"][k])
    assert up["two"]["min_k"]["10"] is None  # a few scored tokens: ⌊0.1 · n⌋ = 0
    assert all(s["min_k"]["50"] is not None for s in up.values())
    assert up_results["roc_auc"]["min_k"]["50"] == ours_results["roc_auc"]["min_k"]["50"]
    assert up_results["roc_auc"]["min_k"]["10"] is None


# ------------------------------------------------------------------ item 6: MiuLab's left cut
def test_max_length_cuts_the_context_from_the_left_as_miulab_encode_pair(tiny_llama):
    """MiuLab model.py HFLM_transformers.encode_pair: whole = encode(context + "A"), ctx =
    encode(context), conti = whole[len(ctx):] (one token, "A"), ctx = ctx[-(max_length -
    len(conti)):]: with --max-length 8 the model sees the last 7 context tokens, then reads "A"
    (add_special_tokens=False throughout, as HFLM_transformers.encode)."""
    import transformers

    from localeval.backends.base import ScoreNext
    from localeval.backends.prompt_tokens import score_tokens

    tok = transformers.AutoTokenizer.from_pretrained(tiny_llama)
    prompt = "以下選擇題為出自臺灣的考題，答案為其中一個選項。\n\n問題：1+1=?\n正確答案：("
    full = tok.encode(prompt, add_special_tokens=False)
    whole = tok.encode(prompt + "A", add_special_tokens=False)
    assert len(full) > 8 and len(whole) == len(full) + 1  # the letter is one token
    ctx, targets = score_tokens(tok, ScoreNext(prompt, ("A", "B"), add_special_tokens=False,
                                               max_length=8), "tiny")
    assert ctx == full[-7:] and targets[0] == whole[-1]
    assert score_tokens(tok, ScoreNext(prompt, ("A", "B"), add_special_tokens=False),
                        "tiny")[0] == full  # default: nothing cut


def test_max_length_reaches_the_request_and_config(tiny_llama, tmp_path):
    from localeval.demo.mcq import SAMPLE_MCQ

    record = evaluate(task="tmlu", model=f"hf:{tiny_llama}", data=SAMPLE_MCQ,
                      subjects=["CAP_mathematics"], limit=2, max_length=20,
                      output=tmp_path / "run", quiet=True, store=False)
    assert record.config["max_length"] == 20
    assert record.results["usage"]["model"].prompt_tokens == 2 * 19  # two prompts cut to 19


@pytest.mark.parametrize("argv, words", [
    (["--max-length", "20", "--method", "generation"], "needs --method likelihood"),
    (["--max-length", "1"], "at least 2"),
    (["--max-length", "20", "--prompt-style", "lm-eval"], "use it with --prompt-style tmlu"),
    (["--stop-at", "budget"], "needs --method generation"),
])
def test_max_length_and_stop_at_refusals_are_one_line(argv, words, model_folder, no_model_load,
                                                      capsys):
    from localeval.cli import main

    assert main(["run", "--task", "tmlu", "--model", model_folder, *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


def test_max_length_on_a_server_is_refused_in_one_line(tmp_path):
    from scripted_server import ScriptedServer

    from localeval.demo.mcq import SAMPLE_MCQ
    from localeval.errors import LocalevalError

    with ScriptedServer(lambda path, body: b"{}") as server, \
            pytest.raises(LocalevalError, match="use a local backend"):
        evaluate(task="tmlu", model="openai:m", data=SAMPLE_MCQ, subjects=["CAP_mathematics"],
                 limit=1, max_length=20, output=tmp_path / "run", quiet=True, store=False,
                 backend_options={"base_url": server.url, "max_retries": 0})
    assert not [p for p, _ in server.posts if p.endswith("completions")]


# ------------------------------------------------------------------ item 7: the paper's gaps
# SEA-SafeguardBench Table 2's prompt cells of its 24 guards (General EN, SEA, ITW EN, SEA,
# CG EN, SEA), as printed (/work/shared/seeds/sea-safeguardbench.md)
TABLE2_PROMPT = [
    (89.5, 86.7, 96.8, 94.2, 59.5, 51.1), (89.3, 87.5, 98.0, 97.0, 65.8, 65.3),
    (90.9, 88.5, 98.2, 97.4, 65.4, 64.7), (89.8, 83.8, 95.1, 89.4, 60.3, 49.9),
    (90.7, 87.0, 97.7, 94.8, 67.5, 62.6), (69.5, 67.2, 75.8, 59.7, 30.3, 35.1),
    (92.0, 88.1, 96.8, 94.3, 67.9, 61.2), (87.9, 87.1, 92.0, 89.8, 59.7, 55.3),
    (94.9, 92.3, 98.9, 98.1, 65.2, 59.7), (83.1, 79.9, 95.8, 90.6, 53.2, 51.8),
    (86.0, 83.2, 97.2, 95.3, 52.2, 55.7), (90.1, 81.6, 91.8, 86.4, 45.7, 33.9),
    (93.9, 90.4, 97.3, 95.7, 56.7, 47.4), (92.6, 84.6, 94.6, 84.7, 46.0, 32.4),
    (91.3, 75.8, 97.5, 82.6, 40.8, 32.4), (92.2, 85.2, 98.6, 94.9, 53.8, 41.0),
    (93.0, 88.3, 98.2, 95.4, 53.3, 42.0), (94.1, 90.6, 96.3, 95.3, 55.0, 45.9),
    (85.6, 72.7, 95.8, 78.5, 46.7, 41.9), (84.0, 80.7, 97.0, 86.1, 42.5, 35.1),
    (79.1, 72.5, 86.6, 75.6, 40.1, 33.8), (80.0, 74.5, 88.5, 83.1, 37.6, 30.2),
    (88.0, 78.3, 95.3, 86.4, 45.5, 40.3), (82.4, 72.6, 88.9, 76.6, 30.0, 37.8)]


def test_the_gap_tables_say_the_papers_averages_do_not_follow_from_its_table_2():
    """The paper's text: prompt language gaps 5.7 / 6.1 / 5.4 (General / ITW / CG) and
    cultural gaps (General - CG) 36.4 EN / 36.2 SEA; the means over its Table 2 are 5.45 /
    6.12 / 5.59 and 36.22 / 36.36. The footnote under each gap table carries them."""
    from statistics import fmean

    from localeval.views.safety_tables import PAPER_CULTURAL_GAP_NOTE, PAPER_LANGUAGE_GAP_NOTE

    lang = [round(fmean(r[2 * i] - r[2 * i + 1] for r in TABLE2_PROMPT), 2) for i in range(3)]
    cult = [round(fmean(r[side] - r[4 + side] for r in TABLE2_PROMPT), 2) for side in (0, 1)]
    assert lang == [5.45, 6.12, 5.59] and cult == [36.22, 36.36]
    assert "5.45 / 6.12 / 5.59" in PAPER_LANGUAGE_GAP_NOTE
    assert "5.7 / 6.1 / 5.4" in PAPER_LANGUAGE_GAP_NOTE
    assert "36.22 / 36.36" in PAPER_CULTURAL_GAP_NOTE
    assert "36.4 / 36.2" in PAPER_CULTURAL_GAP_NOTE


def test_the_footnote_is_printed_under_the_gap_tables():
    from test_safety_analysis import RECORDS, safety, text

    from localeval.analysis.gaps import cultural_gap, table2, table2_language_gap
    from localeval.metrics.classification import average_precision
    from localeval.views import safety_tables as T

    table = table2(RECORDS, average_precision)
    shown = text(T.table2_gap_table(safety(table2_language_gap=table2_language_gap(table))),
                 T.cultural_gap_table(safety(cultural_gap=cultural_gap(table))))
    shown = " ".join(shown.split())  # the caption is wrapped at the table's width
    assert "5.45 / 6.12 / 5.59" in shown and "36.22 / 36.36" in shown


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
