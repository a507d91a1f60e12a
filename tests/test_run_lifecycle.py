"""The one run lifecycle: the typed run record and its status, the task table, and a guard that
implements only the small interface. No model is built: a deterministic stand-in backend."""

from __future__ import annotations

import json
import zlib

import pytest

from localeval import RunRecord, evaluate, load_results, load_run_state
from localeval.backends.base import NextLogprobs, ScoreNext
from localeval.demo.mcq import SAMPLE_MCQ
from localeval.errors import LocalevalError
from localeval.guards import Conversation, Guard, GuardVerdict
from localeval.records.mcq import MCQResults
from localeval.records.run import RunConfig
from localeval.store.runs import NotFinished, RunInProgress, write_config


class HashBackend:
    """Log-probs from a checksum of (prompt, candidate): arbitrary, deterministic, no model."""

    identity = {"backend": "hash", "model": "hash"}

    def __init__(self, fail: BaseException | None = None):
        self.fail, self.calls = fail, 0

    def run(self, requests, progress=None):
        self.calls += 1
        if self.fail:
            raise self.fail
        return [NextLogprobs(logprobs={c: -(zlib.crc32(f"{r.prompt}|{c}".encode()) % 1000) / 100
                                       for c in r.candidates}) for r in requests
                if isinstance(r, ScoreNext)]


def _mcq(tmp_path, backend, **kw):
    return evaluate(task="tmlu", model=backend, data=str(SAMPLE_MCQ), output=tmp_path / "run",
                    cache=tmp_path / "cache.sqlite", quiet=True, **kw)


def test_finished_run_record_round_trips(tmp_path):
    record = _mcq(tmp_path, HashBackend())
    assert isinstance(record, RunRecord) and record.status == "finished"
    assert record.results["n_samples"] == len(record.samples) == 15
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["run"]["status"] == "finished" and config["run"]["schema"] == 1
    assert config["run"]["started_at"] <= config["run"]["finished_at"]
    loaded = load_results(tmp_path / "run")
    assert loaded.status == "finished" and loaded.folder == tmp_path / "run"
    assert loaded.results == record.results and loaded.samples == record.samples
    assert "run" not in loaded.config and loaded.config["task"] == "tmlu"


def test_a_loaded_run_is_whole_and_typed(tmp_path):
    _mcq(tmp_path, HashBackend())
    loaded = load_results(tmp_path / "run")
    assert isinstance(loaded.config, RunConfig) and loaded.config.task == "tmlu"
    assert loaded.config["backend"] == loaded.config.backend == {"backend": "hash",
                                                                 "model": "hash"}
    assert isinstance(loaded.results, MCQResults) and loaded.results.n_samples == 15
    assert loaded.started_at is not None and loaded.finished_at is not None
    # written back, the config is the file's JSON, key for key and in the same order
    stored = json.loads((tmp_path / "run" / "config.json").read_text())
    assert list(loaded.config.data()) == [k for k in stored if k != "run"]
    assert {**loaded.config.data(), "run": loaded.lifecycle().data()} == stored


def test_failed_run_is_marked_and_keeps_no_results(tmp_path):
    with pytest.raises(RuntimeError, match="GPU fell off"):
        _mcq(tmp_path, HashBackend(fail=RuntimeError("GPU fell off")))
    state = load_run_state(tmp_path / "run")
    assert state.lifecycle.status == "failed"
    assert state.lifecycle.error == "RuntimeError: GPU fell off"
    assert state.config.task == "tmlu" and state.folder == tmp_path / "run"
    assert not (tmp_path / "run" / "results.json").exists()


def test_an_unfinished_run_is_refused_where_a_finished_one_is_read(tmp_path):
    with pytest.raises(RuntimeError):
        _mcq(tmp_path, HashBackend(fail=RuntimeError("GPU fell off\nsecond line")))
    with pytest.raises(NotFinished) as refused:
        load_results(tmp_path / "run")
    assert str(refused.value) == (f"{tmp_path / 'run'}: the run is failed, not finished "
                                  "(RuntimeError: GPU fell off second line); rerun its command "
                                  "to finish it")


def test_the_readers_of_unfinished_folders_still_read_them(tmp_path, capsys):
    """The commands that need a finished run refuse a failed one in one line; what takes a
    folder whatever its status still reads it: a rerun checks its settings and resumes it, and
    the viewer's scan leaves it out of the runs it lists."""
    from localeval.cli import main
    from localeval.web.catalog import folder_entry

    with pytest.raises(RuntimeError):
        _mcq(tmp_path, HashBackend(fail=RuntimeError("GPU fell off")))
    folder = tmp_path / "run"
    for command in (["show", str(folder)], ["export", str(folder)], ["report", str(folder)],
                    ["compare", str(folder), str(folder)]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{folder}: the run is failed, not finished" in err, err
    assert folder_entry(folder) is None
    with pytest.raises(LocalevalError, match="holds a run with other settings.*shots"):
        _mcq(tmp_path, HashBackend(), shots=1)
    record = _mcq(tmp_path, HashBackend())  # the same settings: the rerun finishes it
    assert record.status == "finished" and folder_entry(folder)["n_samples"] == 15


def test_interrupted_run_says_so(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        _mcq(tmp_path, HashBackend(fail=KeyboardInterrupt()))
    assert load_run_state(tmp_path / "run").lifecycle.error == "interrupted"


def test_killed_and_old_folders_load(tmp_path):
    killed = RunInProgress({"task": "tmlu"}, folder=tmp_path / "killed", started_at="t0")
    write_config(killed)  # what a run leaves when it is killed before the end
    state = load_run_state(tmp_path / "killed")
    assert state.lifecycle.status == "running" and state.lifecycle.started_at == "t0"
    with pytest.raises(NotFinished, match="killed: the run is running, not finished"):
        load_results(tmp_path / "killed")
    old = tmp_path / "old"  # written before config.json had a "run" block
    old.mkdir()
    (old / "config.json").write_text(json.dumps({"task": "tmlu"}))
    (old / "results.json").write_text(json.dumps({
        "schema": "localeval.mcq/1", "task": "tmlu", "n_samples": 1, "method": "likelihood",
        "shots": 0, "metrics": {"micro": {"n": 1, "acc": 1.0}}}))
    sample = {"correct": True, "gold": "A", "id": "1", "pred": "A"}
    (old / "samples.jsonl").write_text(json.dumps(sample) + "\n")
    record = load_results(old)
    assert record.status == "finished" and [s.data() for s in record.samples] == [sample]
    assert record.started_at is None and record.finished_at is None
    assert load_run_state(old).lifecycle.status == "finished"
    no_results = tmp_path / "older"  # before the lifecycle, and no results: it never finished
    no_results.mkdir()
    (no_results / "config.json").write_text(json.dumps({"task": "tmlu"}))
    assert load_run_state(no_results).lifecycle.status == "running"
    with pytest.raises(NotFinished, match="older: the run is running, not finished"):
        load_results(no_results)
    with pytest.raises(LocalevalError, match="nowhere does not exist: give a run folder"):
        load_results(tmp_path / "nowhere")


def test_task_table_checks_names_and_options(tmp_path):
    with pytest.raises(LocalevalError, match="unknown task 'nope'.*sea-safeguard"):
        evaluate(task="nope", model=HashBackend())
    with pytest.raises(LocalevalError, match="task 'tmlu' has no option.*guard"):
        evaluate(task="tmlu", model=HashBackend(), data=str(SAMPLE_MCQ), guard="llamaguard3")
    with pytest.raises(LocalevalError, match="has no option.*shots"):
        evaluate(task="safety-prompts", model=HashBackend(), shots=3)


class KeywordGuard(Guard):
    """The small interface alone: conversations in, P(harmful) out, no requests at all."""

    name = "keyword"
    template_source = "a test"

    def classify(self, conversations, execute):
        assert all(isinstance(c, Conversation) for c in conversations)
        return [GuardVerdict(0.9 if "kill" in c.prompt.lower() else 0.1) for c in conversations]


def test_a_guard_with_only_the_small_interface(shared, tmp_path):
    backend = HashBackend()
    record = evaluate(task="safety-prompts", model=backend, guard=KeywordGuard(),
                      data=shared / "data" / "xstest" / "xstest_prompts.csv", limit=20,
                      n_resamples=0, quiet=True, output=tmp_path / "run")
    assert backend.calls == 0 and record.results["guard"] == "keyword"
    (row,) = record.results["per_language"]
    assert row["n"] == 20 and record.results["n_failed"] == 0
    assert {s["score"] for s in record.samples} <= {0.1, 0.9}
    assert json.loads((tmp_path / "run" / "config.json").read_text())["guard"]["name"] == "keyword"
    with pytest.raises(LocalevalError, match="guard_options are for a guard given by name"):
        evaluate(task="safety-prompts", model=backend, guard=KeywordGuard(),
                 guard_options={"style": "yes-no"}, data="x")


def test_a_reused_folder_names_the_setting_not_the_data(tmp_path):
    """Issue 51 item 6: rerunning into a folder with other --subjects blamed the data ("data
    changed: …/CAP_mathematics_test.jsonl (none -> sha256 …)"), which no one edited. The
    subjects are named; files read or no longer read are said as such, and only a file whose
    contents changed is "data changed"."""
    _mcq(tmp_path, HashBackend(), subjects=["CAP_civics"])
    with pytest.raises(LocalevalError) as e:
        _mcq(tmp_path, HashBackend(), subjects=["CAP_civics", "CAP_mathematics"])
    said = str(e.value)
    assert "subjects: ['CAP_civics'] -> ['CAP_civics', 'CAP_mathematics']" in said
    assert "data changed" not in said and "CAP_mathematics_test.jsonl (newly read)" in said


def test_a_folder_of_other_settings_is_refused_naming_each_option_with_both_values(tmp_path):
    """Issue 69: the refusal names the option that differs, by its flag, with both values
    (before: config.json's whole ``prompt`` block, cut off before the shots); a setting that
    is no option by its key's path."""
    _mcq(tmp_path, HashBackend())
    with pytest.raises(LocalevalError) as refused:
        _mcq(tmp_path, HashBackend(), shots=3, prompt_style="lm-eval")
    assert "other settings (--shots: 5 -> 3; --prompt-style: 'tmlu' -> 'lm-eval')" in \
        str(refused.value)
    from localeval.store.runs import setting_differences

    assert setting_differences({"task": "tmlu", "model": "hf:a", "prompt": {"shots": 5}},
                               {"task": "tmlu", "model": "hf:b", "prompt": {"shots": 5}}) == \
        ["model: 'hf:a' -> 'hf:b'"]
    assert setting_differences({"task": "x", "backend": {"dtype": "float32"}},
                               {"task": "y", "backend": {"dtype": "float16"}}) == \
        ["backend.dtype: 'float32' -> 'float16'", "task: 'x' -> 'y'"]


def test_a_rerun_with_another_dtype_is_refused_not_a_replacement(tmp_path):
    """A rerun into a folder whose run the model computed at another dtype (``--dtype
    bfloat16`` over a float32 run) replaced that run with other numbers: the folder's
    check compared the task's settings only. The backend's protocol-role settings, as it
    records them once loaded, are compared too; its device (where, not what) is not."""
    class AtDtype(HashBackend):
        def __init__(self, dtype, device="cpu"):
            super().__init__()
            self.identity = {"backend": "hash", "model": "hash", "dtype": dtype,
                             "device": device}

    _mcq(tmp_path, AtDtype("float32"))
    with pytest.raises(LocalevalError) as refused:
        _mcq(tmp_path, AtDtype("bfloat16"))
    assert "holds a run with other settings (--dtype: 'float32' -> 'bfloat16'); give another " \
           "--output, or --overwrite to replace it" in str(refused.value)
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["backend"]["dtype"] == "float32"  # the run is still the float32 one
    _mcq(tmp_path, AtDtype("float32", device="cuda:1"))  # the same run, computed elsewhere
    _mcq(tmp_path, AtDtype("bfloat16"), overwrite=True)
    assert json.loads((tmp_path / "run" / "config.json").read_text())["backend"]["dtype"] == \
        "bfloat16"
