"""Min-K% Prob and Min-K%++ (TMLU §5.1): against a direct computation on the tiny model, the
same at any batch size, from JSONL and multiple-choice sources, through an OpenAI-compatible
server (Min-K% only), the length filter, and ROC-AUC by hand."""

from __future__ import annotations

import json
import math

import pytest

from localeval import evaluate
from localeval.cli import main
from localeval.tasks.contamination import ContaminationTask, Text, _drop_longest, mcq_text, min_k

TEXTS = {
    "one": "A",  # a single token: nothing to score
    "short": "台灣的首都是台北。",
    "mid": "下列何者為哺乳類動物？\nA. 鯨魚\nB. 鯊魚\nC. 鮭魚\nD. 鰻魚",
    "long": "中華民國憲法第一條規定，中華民國基於三民主義，為民有民治民享之民主共和國。" * 6,
    "en": "The quick brown fox jumps over the lazy dog, and then it runs away into the woods.",
}
K = [5, 50, 100]


@pytest.fixture
def texts(tmp_path):
    path = tmp_path / "texts.jsonl"
    path.write_text("".join(json.dumps({"id": k, "text": v}, ensure_ascii=False) + "\n"
                            for k, v in TEXTS.items()), encoding="utf-8")
    return path


def direct(model_dir, text):
    """Per-token log-probs and standardised values, straight from transformers."""
    import torch
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir).eval()
    ids = tok(text)["input_ids"]
    with torch.no_grad():
        logp = model(torch.tensor([ids])).logits[0, :-1].double().log_softmax(-1)
    actual = logp[torch.arange(len(ids) - 1), ids[1:]]
    p = logp.exp()
    mu = (p * logp).sum(-1)
    sigma = ((p * logp * logp).sum(-1) - mu * mu).sqrt()  # Min-K%++'s formula
    return actual.tolist(), ((actual - mu) / sigma).tolist()


def _run(model, texts, **options):
    return evaluate(task="contamination", model=model, data=[str(texts)], k=K, quiet=True,
                    **options)


@pytest.mark.slow
def test_min_k_against_a_direct_computation(tiny_llama, texts):
    record = _run(f"hf:{tiny_llama}", texts, backend_options={"batch_size": 2})
    samples = {s["id"]: s for s in record.samples}
    assert samples["one"]["failed"] and "single token" in samples["one"]["error"]
    for name in ("short", "mid", "long", "en"):
        values, standard = direct(tiny_llama, TEXTS[name])
        s = samples[name]
        assert s["n_tokens"] == len(values) and s["source"] == "texts"
        for k in K:
            count = max(1, math.floor(k / 100 * len(values)))
            assert s["min_k"][str(k)] == pytest.approx(sum(sorted(values)[:count]) / count,
                                                       rel=1e-5)
            assert s["min_k_pp"][str(k)] == pytest.approx(
                sum(sorted(standard)[:count]) / count, rel=1e-3)
    assert record.results["n_failed"] == 1 and record.results["failed"] == ["texts/one"]


@pytest.mark.slow
def test_the_same_at_any_batch_size(tiny_llama, texts):
    one = _run(f"hf:{tiny_llama}", texts, backend_options={"batch_size": 1})
    many = _run(f"hf:{tiny_llama}", texts, backend_options={"batch_size": 16})
    assert one.samples == many.samples  # exact: equal widths, eager attention


def test_min_k_helper_counts_at_least_one():
    assert min_k([-3.0, -1.0, -2.0], 5) == -3.0  # ⌊0.15⌋ = 0 -> 1
    assert min_k([-3.0, -1.0, -2.0, -4.0], 50) == -3.5


def test_multiple_choice_source_text_and_length_filter(tmp_path):
    folder = tmp_path / "exam" / "test"  # CMMLU's layout: test/<subject>.csv
    folder.mkdir(parents=True)
    for subject in ("law", "math"):
        rows = ["Question,A,B,C,D,Answer"] + [
            f"{subject} 問題 {'長' * (i * 3)} {i}？,甲{i},乙,丙,丁,A" for i in range(10)]
        (folder / f"{subject}.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    data = [str(tmp_path / "exam")]
    everything = ContaminationTask(data=data).load()
    filtered = ContaminationTask(data=data, drop_longest=0.2).load()
    assert len(everything) == 20 and len(filtered) == 16  # floor(0.2 * 10) per subject
    assert {t.id for t in everything} - {t.id for t in filtered} == \
        {"law/test-10", "law/test-11", "math/test-10", "math/test-11"}  # the 2 longest each
    first = everything[0]
    assert first.source == "exam" and first.subject == "law"
    assert first.text == "law 問題  0？\nA. 甲0\nB. 乙\nC. 丙\nD. 丁"
    sampled = ContaminationTask(data=data, sample=5, seed=3).load()
    assert len(sampled) == 5 and sampled == ContaminationTask(data=data, sample=5,
                                                               seed=3).load()


def test_a_shared_multiple_choice_dataset_loads(shared):
    texts = ContaminationTask(data=[str(shared / "data" / "tmmluplus-sample")]).load()
    assert len(texts) == 20 and all(t.text.count("\nA. ") == 1 for t in texts)


def test_drop_longest_keeps_order_and_subjects_apart():
    texts = [Text(str(i), "s", subj, "x" * n) for i, (subj, n) in
             enumerate([("a", 5), ("a", 9), ("b", 1), ("a", 7), ("b", 3)])]
    assert [t.id for t in _drop_longest(texts, 0.5)] == ["0", "2", "3"]
    assert mcq_text("Q?", ["x", "y"]) == "Q?\nA. x\nB. y"


@pytest.mark.slow
def test_roc_auc_with_members(tiny_llama, texts, tmp_path):
    members = tmp_path / "members.csv"
    members.write_text("id,member\nshort,1\nmid,0\nlong,1\nen,0\n")
    record = _run(f"hf:{tiny_llama}", texts, members=str(members))
    scores = {s["id"]: s["min_k"]["50"] for s in record.samples if not s.get("failed")}
    pos, neg = [scores["short"], scores["long"]], [scores["mid"], scores["en"]]
    by_hand = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / 4
    assert record.results["roc_auc"]["min_k"]["50"] == pytest.approx(by_hand)
    assert record.results["roc_auc"]["n"] == 4


@pytest.mark.slow
def test_through_an_openai_compatible_server(tiny_llama, texts):
    from openai_server import ModelServer

    server = ModelServer(tiny_llama)
    try:
        remote = _run("openai:tiny", texts, backend_options={"base_url": server.url})
    finally:
        server.stop()
    local = {s["id"]: s for s in _run(f"hf:{tiny_llama}", texts).samples}
    for s in remote.samples:
        if s["id"] == "one":
            assert s["failed"]
            continue
        assert s["n_tokens"] == local[s["id"]]["n_tokens"]
        for k in map(str, K):
            assert s["min_k"][k] == pytest.approx(local[s["id"]]["min_k"][k], abs=1e-4)
        assert s["min_k_pp"] is None  # never approximated without the distribution
    assert all(src["min_k_pp"] is None for src in remote.results["sources"].values())


@pytest.mark.slow
def test_cli(tiny_llama, texts, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["contamination", "--model", f"hf:{tiny_llama}", "--data", str(texts),
                 "--k", "10,50", "--output", str(out), "--quiet", "--max-failed", "0.5"]) == 0
    printed = capsys.readouterr().out
    assert "Min-K% Prob" in printed and "Min-K%++" in printed
    lines = [json.loads(x) for x in (out / "samples.jsonl").open()]
    assert {"id", "source", "n_tokens", "min_k", "min_k_pp"} <= set(lines[1])
    assert set(lines[1]["min_k"]) == {"10", "50"}
    assert main(["run", "--task", "contamination", "--model", f"hf:{tiny_llama}"]) == 2
    assert "localeval contamination" in capsys.readouterr().err


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


@pytest.mark.slow
def test_k_tokens_floor_without_a_score_at_the_first_k_is_a_dash(tiny_llama, tmp_path, capsys):
    """Issue 63 item 10: with --k-tokens floor, a dataset whose texts are all too short for
    the first k (⌊1% · n⌋ = 0 tokens) has no score there: the table's header read that k's
    count and stopped the run with an AttributeError after every text was scored. The
    missing cell is a dash, the header counts the texts scored at the first k that has
    any, and the run's numbers are written."""
    data = tmp_path / "short.jsonl"
    data.write_text("".join(json.dumps({"id": k, "text": TEXTS[k]}, ensure_ascii=False) + "\n"
                            for k in ("short", "mid", "en")), encoding="utf-8")
    out = tmp_path / "run"
    code = main(["contamination", "--model", f"hf:{tiny_llama}", "--data", str(data),
                 "--k", "1,50", "--k-tokens", "floor", "--output", str(out)])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "Traceback" not in printed.err
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    source = next(iter(results["sources"].values()))
    assert source["min_k"]["1"] is None and source["min_k"]["50"]["n"] == 3
    line = next(x for x in printed.out.splitlines() if x.strip().strip("│┃ ").startswith("1 "))
    assert "—" in line, printed.out
    assert "(n=3)" in printed.out
    assert main(["show", str(out)]) == 0 and "—" in capsys.readouterr().out


def test_a_recorded_run_without_a_score_at_the_first_k_shows_a_dash(tmp_path, capsys):
    """Issue 63 item 10, on a recorded run (no model): the first k without a score for its
    one dataset, as --k-tokens floor leaves texts shorter than 100/k tokens."""
    import shutil
    from pathlib import Path

    folder = tmp_path / "run"
    shutil.copytree(Path(__file__).parent / "fixtures" / "runs-a9a91f9" / "contamination",
                    folder)
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    for score in ("min_k", "min_k_pp"):
        results["sources"]["texts"][score]["10"] = None
    (folder / "results.json").write_text(json.dumps(results), encoding="utf-8")
    assert main(["show", str(folder)]) == 0
    printed = capsys.readouterr().out
    assert "texts (n=4)" in printed  # the texts scored at 50%, the first k with a score
    rows = [x for x in printed.splitlines() if x.strip("│┃ ").startswith("10 ")]
    assert len(rows) == 2 and all("—" in x for x in rows), printed
