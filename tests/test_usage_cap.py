"""Issue 63 item 4: a cap (``--max-spend``, ``--max-tokens-total``) is checked after every
backend call, the last one too (:mod:`localeval.store.usage`). A run of at most 16 requests
(one budget chunk) on a server without ``usage`` was never checked after its only call: it
printed "cost: 0.0000 … uncounted" and ended exit 0 under a cap it could not enforce. A loopback
server writes the replies; no model is built."""

from __future__ import annotations

import json

from scripted_server import ScriptedServer

from localeval.cli import main
from localeval.demo.mcq import SAMPLE_MCQ


def _no_usage(path, body):
    return json.dumps({"choices": [{"index": 0, "text": "B"}]}).encode()


def _with_usage(path, body):
    return json.dumps({"choices": [{"index": 0, "text": "B"}],
                       "usage": {"prompt_tokens": 100, "completion_tokens": 3}}).encode()


def _run(url, tmp_path, *more):
    return main(["run", "--task", "tmlu", "--data", str(SAMPLE_MCQ), "--model", "openai:m",
                 "--base-url", url, "--method", "generation", "--shots", "0",
                 "--output", str(tmp_path / "run"), "--no-store", "--quiet", "--no-report",
                 *more])


def test_a_capped_run_of_one_chunk_without_usage_stops(tmp_path, capsys):
    """The issue's run: 15 requests (the sample's questions), one chunk, no usage,
    --max-spend 0.001: exit 4 (budget), saying why, the answers cached for a rerun."""
    with ScriptedServer(_no_usage) as server:
        code = _run(server.url, tmp_path, "--price", "in=1,out=2", "--max-spend", "0.001")
        assert len(server.posts) == 15
    err = capsys.readouterr().err
    assert code == 4, err
    assert "--max-spend 0.001 cannot be enforced: 15 answers came back with no token count" \
        in err
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["run"]["status"] == "failed"


def test_a_token_cap_reached_by_the_last_call_stops_too(tmp_path, capsys):
    """Counted tokens: 15 × 103 sent in the only call, over --max-tokens-total 500: budget
    reached, as it would be had more calls followed; under the cap the run ends as before."""
    with ScriptedServer(_with_usage) as server:
        assert _run(server.url, tmp_path, "--max-tokens-total", "500") == 4
        assert "1545 tokens sent, --max-tokens-total 500" in capsys.readouterr().err
        assert _run(server.url, tmp_path, "--max-tokens-total", "100000") == 0
