"""Whole runs through the CLI on real data in ../shared, with a seeded tiny random model."""

import json

import pytest

from localeval.api import evaluate
from localeval.cli import main


def read_samples(folder):
    return [json.loads(x) for x in (folder / "samples.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_cli_run_on_cmmlu_writes_run_folder(tmp_path, shared, tiny_llama, capsys):
    out = tmp_path / "run"
    code = main(["run", "--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"),
                 "--subjects", "agronomy,virology", "--model", f"hf:{tiny_llama}", "--shots", "5",
                 "--method", "likelihood", "--limit", "20", "--output", str(out), "--quiet"])
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    config = json.loads((out / "config.json").read_text())
    samples = read_samples(out)
    assert len(samples) == 40 and results["n_samples"] == 40
    for s in samples:
        assert {"id", "subject", "prompt", "logprobs", "pred", "gold", "correct"} <= set(s)
        assert s["pred"] == max(s["logprobs"], key=s["logprobs"].get)
        assert s["correct"] == (s["pred"] == s["gold"]) and s["n_shots"] == 5
    assert results["metrics"]["micro"]["correct"] == sum(s["correct"] for s in samples)
    assert config["backend"]["model"] == str(tiny_llama) and config["subjects"] == ["agronomy", "virology"]
    assert "torch" in config["packages"]
    assert "cmmlu · likelihood · 5-shot" in capsys.readouterr().out

    # Rerun: everything comes from the cache, and the files are byte-identical (timing aside).
    before = (out / "samples.jsonl").read_bytes()
    assert main(["run", "--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"),
                 "--subjects", "agronomy,virology", "--model", f"hf:{tiny_llama}", "--limit", "20",
                 "--batch-size", "3", "--output", str(out), "--quiet"]) == 0
    assert (out / "samples.jsonl").read_bytes() == before


@pytest.mark.slow
def test_tmmluplus_sample_zero_shot_and_generation(tmp_path, shared, tiny_llama):
    data = shared / "data" / "tmmluplus-sample" / "test.jsonl"
    r = evaluate(task="tmmluplus-sample", model=f"hf:{tiny_llama}", data=data, shots=0,
                 quiet=True)
    assert r.results["n_samples"] == 20 and r.results["metrics"]["micro"]["n"] == 20
    g = evaluate(task="tmmluplus-sample", model=f"hf:{tiny_llama}", data=data, shots=0,
                 method="generation", max_tokens=4, quiet=True, output=tmp_path / "gen")
    for s in g.samples:
        assert "output" in s
        if s["pred"] is None:  # a random model rarely starts with a letter: listed, not guessed
            assert s["error"] and s["correct"] is False
    assert g.results["unanswered"] == [s["id"] for s in g.samples if s["pred"] is None]


@pytest.mark.slow
def test_cot_chat_on_bundled_sample(tmp_path, tiny_llama):
    from localeval.demo.mcq import SAMPLE_MCQ

    r = evaluate(task="tmlu", model=f"hf:{tiny_llama}", data=str(SAMPLE_MCQ),
                 subjects=["CAP_mathematics"], method="generation", cot=True, chat="single",
                 max_tokens=8, quiet=True)
    s = r.samples[0]
    assert s["prompt"][-1] == {"role": "assistant", "content": "\n讓我們一步一步思考。\n"}
    assert "讓我們一步一步思考。\n2x = 11 - 3" in s["prompt"][0]["content"]


@pytest.mark.slow
def test_cot_reduces_shots_to_fit_context(tmp_path, tiny_llama):
    from localeval.backends.hf import HFBackend
    from localeval.demo.mcq import SAMPLE_MCQ

    backend = HFBackend(str(tiny_llama))
    backend.max_context = lambda: 330  # a model with a short context window
    r = evaluate(task="tmlu", model=backend, data=str(SAMPLE_MCQ), subjects=["driving_rule"],
                 method="generation", cot=True, max_tokens=100, reduce_few_shot=True,
                 quiet=True)
    assert all(0 <= s["n_shots"] < 5 for s in r.samples)
    assert all(backend.count_tokens(s["prompt"]) + 100 <= 330 for s in r.samples)


@pytest.mark.parametrize("argv, words", [
    (["run", "--task", "nope", "--model", "hf:x"], "unknown task 'nope'"),
    (["run", "--task", "tmlu", "--model", "x"], "needs a backend prefix"),
    (["run", "--task", "tmlu", "--model", "hf:x", "--method", "guess"], "--method must be one of likelihood, generation"),
    (["run", "--task", "tmlu", "--model", "hf:x", "--cot"], "--cot needs --method generation"),
])
def test_clear_one_line_errors(argv, words, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


def test_missing_model_folder_is_one_line(tmp_path, shared, capsys):
    code = main(["run", "--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"),
                 "--subjects", "arts", "--model", f"hf:{tmp_path / 'missing'}"])
    assert code == 2 and "model folder" in capsys.readouterr().err


@pytest.mark.slow
def test_demo(demo_run):
    """`localeval demo --output DIR --quiet`, run once for the session (conftest's demo_run)."""
    assert demo_run.code == 0
    out = demo_run.out
    assert "RANDOM" in out and "Taiwan Spe." in out
    assert (demo_run.folder / "tmlu-likelihood" / "results.json").exists()


@pytest.mark.slow
def test_cli_safety_run_on_jbb_multilingual(tmp_path, shared, tiny_llama, capsys):
    out = tmp_path / "guard"
    code = main(["run", "--task", "safety-prompts", "--guard", "zero-shot",
                 "--guard-option", "label_scores=full", "--guard-option", "verdict_position=fixed",  # a random model: labels not top 2
                 "--data", str(shared / "data" / "jbb-multilingual" / "prompts.jsonl"),
                 "--model", f"hf:{tiny_llama}", "--limit", "6", "--bootstrap", "50",
                 "--output", str(out), "--quiet", "--all"])
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    assert results["schema"] == "localeval.safety/1" and results["n_failed"] == 0
    langs = {r["lang"] for r in results["per_language"]}
    assert {"en", "zh", "th", "vi"} <= langs
    assert results["language_gap"] and "Language gap" in capsys.readouterr().out
    samples = read_samples(out)
    assert all(0.0 <= s["score"] <= 1.0 for s in samples)
    # without --all: the headline, and one line on stderr saying where the rest is
    assert main(["run", "--task", "safety-prompts", "--guard", "zero-shot",
                 "--guard-option", "label_scores=full", "--guard-option", "verdict_position=fixed", "--data",
                 str(shared / "data" / "jbb-multilingual" / "prompts.jsonl"), "--model",
                 f"hf:{tiny_llama}", "--limit", "6", "--bootstrap", "50", "--output", str(out),
                 "--quiet"]) == 0
    printed = capsys.readouterr()
    assert "Overall" in printed.out and "Language gap" not in printed.out
    assert f"more tables: localeval show {out}" in printed.err
    assert {"id", "lang", "subset", "kind", "label", "score"} <= set(samples[0])


@pytest.mark.slow
def test_cli_unknown_guard_is_one_line(tiny_llama, shared, capsys):
    code = main(["run", "--task", "safety-prompts", "--guard", "nope", "--data",
                 str(shared / "data" / "xstest" / "xstest_prompts.csv"),
                 "--model", f"hf:{tiny_llama}"])
    err = capsys.readouterr().err
    assert code == 2 and "nope" in err and "llamaguard3" in err
