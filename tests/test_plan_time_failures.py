"""A failure that always recurs is not offered a rerun: candidates the model's tokenizer cannot
tell apart stop the run at plan time, in one line, before any forward pass; a request that
fails alone for good is counted as permanent; only a transient failure (a timeout, a dropped
connection, a server error) says "rerun the command to retry". No model is built: a tokenizer
and a config are enough, and the other backends are stand-ins."""

from __future__ import annotations

import json
import zlib

import pytest
from rich.console import Console

from localeval import evaluate
from localeval.backends.base import Failed, NextLogprobs, ScoreNext
from localeval.backends.failures import OverLimit, RequestFailure, Unclassified
from localeval.cli import main
from localeval.cli.run_options import TooManyFailures, check_failures
from localeval.demo.mcq import SAMPLE_MCQ
from localeval.errors import LocalevalError
from localeval.report.console import print_results
from localeval.store.executor import CachedExecutor, rerun_advice

SPACED = ("Ġ A", "Ġ B", "Ġ C", "Ġ D")  # the merges that make " A" … " D" one token each


@pytest.fixture
def spaced_letters_split(tmp_path, shared):
    """A model folder (config, tokenizer and an empty weights file) whose tokenizer splits " A" into " "
    and "A", as some tokenizers do: every lm-eval-style candidate's first token is " "."""
    import transformers
    from transformers import PreTrainedTokenizerFast

    spec = json.loads((shared / "models" / "smollm2-tokenizer" / "tokenizer.json").read_text())
    spec["model"]["merges"] = [m for m in spec["model"]["merges"]
                               if (m if isinstance(m, str) else " ".join(m)) not in SPACED]
    folder = tmp_path / "split-letters"
    folder.mkdir()
    (tmp_path / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
    PreTrainedTokenizerFast(tokenizer_file=str(tmp_path / "tokenizer.json"),
                            eos_token="<|endoftext|>", bos_token="<|endoftext|>",
                            unk_token="<|endoftext|>").save_pretrained(folder)
    transformers.LlamaConfig(vocab_size=49152, hidden_size=64, intermediate_size=192,
                             num_hidden_layers=1, num_attention_heads=4,
                             num_key_value_heads=2).save_pretrained(folder)
    (folder / "model.safetensors").write_bytes(b"")  # a preflight finds weights; never loaded
    return folder


def test_candidates_sharing_a_first_token_fail_at_plan_time(spaced_letters_split, shared,
                                                            tmp_path, capsys, monkeypatch):
    from localeval.backends.hf.backend import HFBackend

    def no_weights(self):
        raise AssertionError("the weights were loaded")
    monkeypatch.setattr(HFBackend, "model", property(no_weights))
    out = tmp_path / "run"
    code = main(["run", "--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"),
                 "--subjects", "agronomy", "--prompt-style", "lm-eval", "--shots", "0",
                 "--method", "likelihood", "--limit", "3", "--model",
                 f"hf:{spaced_letters_split}", "--output", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: --method likelihood cannot score")
    assert "(' A', ' B', ' C', ' D') share a first token" in err
    assert "--method generation" in err and "rerun" not in err
    # issue 69: the style that works, checked on this tokenizer, not an internal request
    assert "or --prompt-style tmlu, whose letters this model's tokenizer tells apart" in err
    assert "ScoreNext" not in err
    assert not (out / "config.json").exists()  # nothing ran, no run folder left


class StandIn:
    """Log-probs from a checksum of (prompt, candidate); ``failure``: every request fails with
    it (permanent or not by its kind); ``clash``: what ``check_candidates`` says."""

    identity = {"backend": "stand-in", "model": "stand-in"}

    def __init__(self, failure: RequestFailure | None = None, clash: str | None = None):
        self.failure, self.clash, self.ran = failure, clash, 0

    def check_candidates(self, request: ScoreNext) -> str | None:
        return self.clash

    def run(self, requests, progress=None):
        self.ran += len(requests)
        if self.failure:
            return [Failed(self.failure) for _ in requests]
        return [NextLogprobs(logprobs={c: -(zlib.crc32(f"{r.prompt}|{c}".encode()) % 1000) / 100
                                       for c in r.candidates}) for r in requests]


def _mcq(backend, tmp_path):
    return evaluate(task="tmlu", model=backend, data=str(SAMPLE_MCQ), output=tmp_path / "run",
                    cache=tmp_path / "cache.sqlite", quiet=True, store=False)


def test_a_backend_that_sees_a_clash_stops_the_run_before_it_runs(tmp_path):
    backend = StandIn(clash="candidates ('A', 'B') share a first token")
    with pytest.raises(LocalevalError, match="cannot score this model: candidates") as e:
        _mcq(backend, tmp_path)
    assert "rerun" not in str(e.value) and backend.ran == 0
    # the same net under every task: the executor asks before anything runs
    execute = CachedExecutor(backend, None, True, "requests")
    with pytest.raises(LocalevalError, match="share a first token: every request"):
        execute([ScoreNext("p", ("A", "B"))])
    assert backend.ran == 0


def _failure_lines(record) -> tuple[str, str]:
    with pytest.raises(TooManyFailures) as e:
        check_failures(record.results, 0)
    console = Console(record=True, width=400)
    print_results(record.results, console)
    return str(e.value), console.export_text()


def test_a_permanent_failure_is_not_offered_a_rerun(tmp_path):
    record = _mcq(StandIn(OverLimit("prompt has 9000 tokens, over the model's context of "
                                    "8192")), tmp_path)
    assert record.results["n_failed"] == 15
    assert record.results["request_failures"] == {"transient": 0, "permanent": 15}
    exit_line, console = _failure_lines(record)
    for text in (exit_line, console):
        assert "to retry" not in text and "a rerun would fail the same way" in text


def test_a_transient_failure_still_says_rerun(tmp_path):
    record = _mcq(StandIn(Unclassified("ReadTimeout after 3 retries")), tmp_path)
    assert record.results["request_failures"] == {"transient": 15, "permanent": 0}
    exit_line, console = _failure_lines(record)
    for text in (exit_line, console):
        assert "rerun the same command to retry them" in text or \
            "rerun the command to retry them" in text


def test_rerun_advice_reads_the_counts():
    assert "rerun the command" in rerun_advice({})  # results from before the count
    assert "rerun the command" in rerun_advice(
        {"request_failures": {"transient": 1, "permanent": 4}})
    # nothing failed to run (an unparseable answer, read from the cache next time): no rerun
    assert "would fail the same way" in rerun_advice(
        {"request_failures": {"transient": 0, "permanent": 0}})
