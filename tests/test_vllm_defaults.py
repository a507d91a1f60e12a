"""vLLM's OpenAI server (the session's one, conftest.py ``vllm_server``), on the seeded random
model of ``test_vllm.py``, whose answer letters are anywhere in its vocabulary: multiple choice
is scored with no scoring flag and the numbers are ``hf:``'s within the README's vLLM tolerance.
``--scoring auto`` reads each question by token id (vLLM's ``logprob_token_ids``, proved by the
backend's probe: one request a question, issue 65); ``--scoring echo`` from prompt + option
echoed; ``--scoring top-k`` alone fails each question ("no candidate among the top 20 next
tokens"), as every question did before ``--scoring``.

The server runs with --max-logprobs 49152 (the guards' whole-vocabulary read in test_vllm.py
needs it: one server for both files, a start costs ~80 s); auto refusing a top-k over vLLM's
default cap of 20 and redoing it in echo is test_echo_scoring.py's, on a capped loopback server.
"""

from __future__ import annotations

import json

import pytest
from vllm_agreement import assert_mcq_agrees
from vllm_agreement import samples as _samples

from localeval.backends.id_scoring import PROVED
from localeval.cli import main

pytestmark = pytest.mark.slow
MCQ = ["run", "--task", "cmmlu", "--subjects", "agronomy,arts", "--limit", "12", "--quiet"]


def _run(tmp_path, name, shared, *args) -> int:
    return main([*MCQ, "--data", str(shared / "data" / "cmmlu"), *args, "--output",
                 str(tmp_path / name)])


def test_every_question_scored_with_no_flag_and_equal_to_hf(vllm_server, vllm_model, shared,
                                                            tmp_path):
    remote = ["--model", "openai:tiny", "--base-url", vllm_server.url]
    assert _run(tmp_path, "hf", shared, "--model", f"hf:{vllm_model}") == 0
    hf = _samples(tmp_path / "hf")
    # no flag: by token id, the probe's verdict in the identity (so in the cache key)
    assert _run(tmp_path, "auto", shared, *remote) == 0
    assert_mcq_agrees(_samples(tmp_path / "auto"), hf, scoring="ids")
    config = json.loads((tmp_path / "auto" / "config.json").read_text())
    assert config["backend"]["scoring"] == "auto"
    assert config["backend"]["logprob_token_ids"] == PROVED
    assert _run(tmp_path, "ids", shared, *remote, "--scoring", "ids") == 0
    assert_mcq_agrees(_samples(tmp_path / "ids"), hf, scoring="ids")
    assert _run(tmp_path, "echo", shared, *remote, "--scoring", "echo") == 0
    assert_mcq_agrees(_samples(tmp_path / "echo"), hf, scoring="echo")
    # the same log-probs both ways: the same position of the same model, read twice
    ids, echo = _samples(tmp_path / "ids"), _samples(tmp_path / "echo")
    for i, s in ids.items():
        assert s["pred"] == echo[i]["pred"]
        for k, v in s["logprobs"].items():
            assert v == pytest.approx(echo[i]["logprobs"][k], abs=1e-3), (i, k)
    # the top-k alone: what every run got before, each question failed with the reason
    assert _run(tmp_path, "top-k", shared, *remote, "--scoring", "top-k") == 3
    failed = _samples(tmp_path / "top-k")
    assert all("no candidate among the top 20" in s["error"] for s in failed.values())
