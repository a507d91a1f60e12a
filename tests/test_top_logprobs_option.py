"""``--top-logprobs`` is bounded where it is checked (issue 63, Messages): 10**20 was accepted
and sent to the server as it was. A count above any vocabulary is one line, exit 2, before any
server is asked."""

from __future__ import annotations

import pytest

from localeval.backends.config import MAX_TOP_LOGPROBS, BackendConfig
from localeval.cli import main
from localeval.demo.mcq import SAMPLE_MCQ
from localeval.errors import LocalevalError


def test_a_top_logprobs_over_any_vocabulary_is_one_line(tmp_path, capsys):
    code = main(["run", "--task", "tmlu", "--data", str(SAMPLE_MCQ), "--model", "openai:m",
                 "--base-url", "http://127.0.0.1:9/v1", "--top-logprobs", str(10**20),
                 "--output", str(tmp_path / "run"), "--no-store", "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err == [f"error: --top-logprobs must be at most {MAX_TOP_LOGPROBS:,} (more than "
                   f"any model's vocabulary), not {10**20}"], err


def test_the_bound_holds_for_the_python_api_and_a_whole_vocabulary_still_fits():
    with pytest.raises(LocalevalError, match="--top-logprobs must be at most"):
        BackendConfig(top_logprobs=MAX_TOP_LOGPROBS + 1)
    assert BackendConfig(top_logprobs=262_144).top_logprobs == 262_144  # Gemma 3's vocabulary
