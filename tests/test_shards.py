"""`localeval run --shard I/N` and `localeval merge` (issue 66): a run split into N content-keyed
shards, each run on its own (one after the other here, as a Slurm array or a Kubernetes Indexed
Job runs them side by side), merges into exactly the single run: the same samples in the same
order (ids, letters, failures; log-probs within 1e-6, a batch of other rows may move the last
bits), the same results, the same rescore, and a merged folder that resumes as the run."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from offline_runs import HashedGuard
from tiny_models import make_model

import localeval.run
from localeval import evaluate
from localeval.backends.base import Backend, Generate, Generated
from localeval.backends.registry import load_backend
from localeval.cli import main
from localeval.demo.mcq import SAMPLE_MCQ
from localeval.demo.safety import SAMPLE_SAFETY
from localeval.errors import LocalevalError
from localeval.merge import merge_runs
from localeval.rescore import rescore_run
from localeval.store.results_db import recorded_runs
from localeval.tasks.run_spec import RunSpec
from localeval.tasks.shards import Shard, shard_of

N = 3
# what differs between two runs of one spec whatever they are: when and how fast
LIFECYCLE = ("timing", "history", "usage")


def _runs(tmp_path: Path, name: str, **given) -> tuple[Path, list[Path]]:
    """The single run and its N shards, each in a folder of its own with its own cache."""
    folders = [tmp_path / name / "single", *(tmp_path / name / f"shard-{i}" for i in range(N))]
    for folder, shard in zip(folders, [None, *range(N)], strict=True):
        evaluate(output=folder, cache=folder / "cache.sqlite", quiet=True, store=False,
                 shard=None if shard is None else f"{shard}/{N}", **given)
    return folders[0], folders[1:]


def _lines(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "samples.jsonl").open(encoding="utf-8")]


def _results(folder: Path) -> dict:
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    return {k: v for k, v in results.items() if k not in LIFECYCLE}


def _same_samples(a: Path, b: Path) -> None:
    """Field for field, log-probs within 1e-6."""
    one, other = _lines(a), _lines(b)
    assert [s["id"] for s in one] == [s["id"] for s in other]
    for x, y in zip(one, other, strict=True):
        assert set(x) == set(y)
        for key in x:
            if key == "logprobs" and x[key] is not None:
                assert x[key].keys() == y[key].keys()
                assert all(abs(x[key][c] - y[key][c]) < 1e-6 for c in x[key])
            else:
                assert x[key] == y[key], (x["id"], key)


def _merged_equals_single(tmp_path: Path, name: str, rescore: dict, **given) -> Path:
    single, shards = _runs(tmp_path, name, **given)
    assert sum(len(_lines(s)) for s in shards) == len(_lines(single))
    assert all(_lines(s) for s in shards)  # the sample data gives each of 3 shards some items
    merged = tmp_path / name / "merged"
    merge_runs(list(reversed(shards)), merged, store=False)  # any order
    _same_samples(single, merged)
    if "logprobs" not in _lines(single)[0]:
        assert _results(merged) == _results(single)
    else:  # accuracies equal (the letters are); the log-probs only to the last bits
        assert _results(merged)["metrics"]["micro"] == _results(single)["metrics"]["micro"]
    # rescored from its merged cache, the merged folder gives the single run's rescore
    again = [rescore_run(f, rescore, output=tmp_path / name / f"{f.name}.rescored",
                         store=False, quiet=True).folder for f in (single, merged)]
    assert again[0] is not None and again[1] is not None
    _same_samples(again[0], again[1])
    assert _results(again[0]) == _results(again[1])
    return merged


@pytest.fixture(scope="module")
def tiny_model(tiny_llama):
    """The tiny model loaded once, handed to every run of a test as the caller's object."""
    with load_backend(f"hf:{tiny_llama}") as backend:
        yield backend


@pytest.fixture(scope="module")
def writing_model(tmp_path_factory):
    """A tiny model whose LM head is its own (untied): it writes varied text, so two draws
    differ and a draw seeded otherwise would show."""
    folder = make_model(tmp_path_factory.mktemp("untied"), layers=1, tied=False)
    with load_backend(f"hf:{folder}") as backend:
        yield backend


def test_mcq_likelihood_shards_merge_into_the_single_run(tmp_path, tiny_model):
    single, shards = _runs(tmp_path, "mcq", task="tmlu", model=tiny_model,
                           data=Path(str(SAMPLE_MCQ)), shots=2, method="likelihood",
                           limit=2)
    merged = tmp_path / "mcq" / "merged"
    merge_runs(shards, merged, store=False)
    _same_samples(single, merged)
    a, b = _results(single), _results(merged)
    assert a["metrics"]["micro"] == b["metrics"]["micro"] and a["n_failed"] == b["n_failed"]
    # every dev shot in every shard's prompts: only the scored questions are shared out
    assert {s["n_shots"] for s in shards for s in _lines(s)} == {2}


def test_mcq_generation_with_repeats_shards_merge_into_the_single_run(tmp_path,
                                                                     writing_model):
    # each draw is seeded by its own request (the prompt's tokens and the draw's number:
    # backends/hf/generate.py draw_one), so a shard draws what the single run draws
    merged = _merged_equals_single(
        tmp_path, "gen", {"extract": "strict"}, task="tmlu", model=writing_model,
        data=Path(str(SAMPLE_MCQ)), shots=0, method="generation", max_tokens=2, repeats=2,
        limit=2)
    draws = [v for s in _lines(merged) for v in s["variants"]]
    assert {v["repeat"] for v in draws} == {1}  # the second draw of each question


def test_a_draw_is_seeded_by_its_own_request_not_by_what_runs_beside_it(writing_model):
    # LLM safety's responses and --repeats are Generate(sample=k): a shard sends a draw with
    # other requests around it than the single run does, and must get the same text
    draws = [Generate(f"Question {i}: say something.", max_tokens=6, sample=k)
             for i in range(3) for k in (0, 1)]
    together = [r.text for r in writing_model.run(draws)]
    alone = [writing_model.run([d])[0].text for d in reversed(draws)][::-1]
    assert together == alone
    assert together[0] != together[1]  # a draw of its own: sampled, not the greedy text


def test_guard_shards_merge_into_the_single_run(tmp_path):
    _merged_equals_single(tmp_path, "guard", {"sensitive": "exclude", "n_resamples": 0},
                          task="sea-safeguard", model=HashedGuard(), guard="zero-shot",
                          data=Path(str(SAMPLE_SAFETY)), n_resamples=20)


class Failing(Backend):
    """Fails a third of the questions (by a hash of the prompt): failures must merge where the
    single run has them."""

    identity = {"backend": "failing", "model": "failing"}

    def run(self, requests, progress=None):
        from localeval.backends.base import Failed
        from localeval.backends.failures import ErrorReply

        return [Failed(ErrorReply("no answer")) if hash_of(r.prompt) % 3 == 0 else
                Generated(text="答案是 B。") for r in requests]


def hash_of(prompt) -> int:
    return hashlib.sha256(json.dumps(prompt, ensure_ascii=False).encode()).digest()[0]


def test_failed_samples_merge_where_the_single_run_has_them(tmp_path):
    single, shards = _runs(tmp_path, "failing", task="tmlu", model=Failing(),
                           data=Path(str(SAMPLE_MCQ)), shots=0, method="generation")
    merge_runs(shards, tmp_path / "merged", store=False)
    _same_samples(single, tmp_path / "merged")
    assert _results(tmp_path / "merged") == _results(single)
    assert _results(single)["n_failed"] > 0


def test_shares_are_keyed_by_item_id_and_cover_every_item_once():
    assert str(Shard.parse(" 2 / 5 ")) == "2/5"
    assert shard_of("CAP_civics/1", 3) == shard_of("CAP_civics/1", 3)  # never the order
    ids = [f"subject/{i}" for i in range(300)]
    shares = [[i for i in ids if Shard(k, N).holds(i)] for k in range(N)]
    assert sorted(sum(shares, [])) == sorted(ids) and all(len(s) > 60 for s in shares)
    assert Shard(0, 1).holds("anything")
    for bad in ("3/3", "-1/3", "1/0", "a/b", "1", "1/3/4"):
        with pytest.raises(LocalevalError, match=r"give I/N with 0 <= I < N and N >= 1"):
            Shard.parse(bad)


class SaysB(Backend):
    identity = {"backend": "says-b", "model": "says-b"}

    def __init__(self):
        self.calls = 0

    def run(self, requests, progress=None):
        self.calls += len(requests)
        return [Generated(text="答案是 B。") for _ in requests]


def _cli(monkeypatch, model_folder: str, *flags: str) -> int:
    monkeypatch.setattr(localeval.run, "load_backend", lambda spec, **kw: SaysB())
    return main(["run", "--task", "tmlu", "--data", str(SAMPLE_MCQ), "--model", model_folder,
                 "--method", "generation", "--shots", "0", "--no-report", "--quiet", *flags])


def test_a_shard_has_its_own_folder_resumes_and_is_named_a_shard(tmp_path, model_folder,
                                                                 monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert _cli(monkeypatch, model_folder, "--shard", "1/3", "--no-store") == 0
    assert _cli(monkeypatch, model_folder, "--no-store") == 0
    (whole,) = [p for p in (tmp_path / "runs" / "tmlu").iterdir() if "shard" not in p.name]
    shard = whole.with_name(whole.name + "-shard-1-of-3")
    config = json.loads((shard / "config.json").read_text(encoding="utf-8"))
    assert config["shard"] == "1/3" and "shard" not in json.loads(
        (whole / "config.json").read_text(encoding="utf-8"))
    spec, whole_spec = (RunSpec.from_config(json.loads((f / "config.json").read_text()))
                        for f in (shard, whole))
    assert spec.protocol_facts() == whole_spec.protocol_facts()  # a speed fact: no number's
    assert spec.name == whole_spec.name + " · shard 1/3"
    # the same command resumes it: every answer from its cache
    assert _cli(monkeypatch, model_folder, "--shard", "1/3", "--no-store") == 0
    results = json.loads((shard / "results.json").read_text(encoding="utf-8"))
    assert results["history"][-1]["requests_run"] == 0
    # a whole run is not resumed into a shard's folder, nor another shard
    capsys.readouterr()
    for other in ([], ["--shard", "2/3"]):
        assert _cli(monkeypatch, model_folder, "--output", str(shard), "--no-store",
                    *other) == 2
        err = capsys.readouterr().err
        assert "holds a run with other settings (shard: '1/3' ->" in err
        assert len(err.strip().splitlines()) == 1
    assert _cli(monkeypatch, model_folder, "--shard", "3/3") == 2
    err = capsys.readouterr().err.strip()
    assert err == ("error: --shard 3/3: give I/N with 0 <= I < N and N >= 1 (0/4 is the first "
                   "of four; $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT)")


def test_merge_from_the_command_line_records_one_run_and_the_merged_folder_resumes(
        tmp_path, model_folder, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "store.sqlite"
    monkeypatch.setenv("LOCALEVAL_STORE", str(store))
    for i in range(N):
        assert _cli(monkeypatch, model_folder, "--shard", f"{i}/{N}") == 0
    assert not store.exists()  # a shard's numbers are of a part: not in the store
    shards = sorted(str(p) for p in (tmp_path / "runs" / "tmlu").iterdir())
    assert main(["merge", *shards, "--output", "merged", "--no-report"]) == 0
    (run,) = recorded_runs(store)
    assert Path(run["folder"]).resolve() == (tmp_path / "merged").resolve()
    # a merge job run again writes the same merged folder; --no-store keeps the store as it is
    assert main(["merge", *shards, "--output", "merged", "--no-report", "--no-store"]) == 0
    assert len(recorded_runs(store)) == 1
    # `localeval run` into the merged folder is a rerun of the single run: all from its cache
    assert _cli(monkeypatch, model_folder, "--output", "merged", "--no-store") == 0
    results = json.loads((tmp_path / "merged" / "results.json").read_text(encoding="utf-8"))
    assert results["history"][-1]["requests_run"] == 0
    assert results["timing"]["shards"] == N and results["timing"]["requests_run"] == 15


def _guard_shards(tmp_path: Path, **given) -> list[Path]:
    folders = [tmp_path / f"shard-{i}" for i in range(N)]
    data = given.pop("data", Path(str(SAMPLE_SAFETY)))
    for i, folder in enumerate(folders):
        evaluate(task="sea-safeguard", model=HashedGuard(), guard="zero-shot",
                 data=data, output=folder,
                 cache=folder / "cache.sqlite", quiet=True, store=False, n_resamples=0,
                 shard=f"{i}/{N}", **given)
    return folders


def _refused(args: list, capsys) -> str:
    assert main(["merge", *map(str, args), "--no-store", "--no-report"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_merge_refuses_a_missing_an_overlapping_and_a_foreign_shard(tmp_path, capsys):
    a, b, c = _guard_shards(tmp_path)
    out = tmp_path / "merged"
    assert "shard 2/3 is missing" in _refused([a, b, "--output", out], capsys)
    assert f"{a} and {a} are both shard 0/3 (they overlap)" in _refused(
        [a, a, b, c, "--output", out], capsys)
    # shard 2/3 of a run with another option
    other = tmp_path / "other"
    evaluate(task="sea-safeguard", model=HashedGuard(), guard="zero-shot",
             data=Path(str(SAMPLE_SAFETY)), output=other, quiet=True, store=False,
             n_resamples=0, threshold_rule="ge", shard=f"2/{N}")
    err = _refused([a, b, other, "--output", out], capsys)
    assert f"{other} is a shard of another run than {a} (threshold_rule: 'gt' -> 'ge')" in err
    # shard 2/3 of a run on other data (one prompt edited)
    data = tmp_path / "items.jsonl"
    text = Path(str(SAMPLE_SAFETY)).read_text(encoding="utf-8")
    data.write_text(text.replace("neighbour", "neighbor", 1), encoding="utf-8")
    edited = tmp_path / "edited"
    evaluate(task="sea-safeguard", model=HashedGuard(), guard="zero-shot", data=data,
             output=edited, quiet=True, store=False, n_resamples=0, shard=f"2/{N}")
    err = _refused([a, b, edited, "--output", out], capsys)
    assert f"{edited} is a shard of another run than {a}" in err
    # of one data set through two paths it is the same data; the edit is what differs
    assert "other data: sha256" in err
    # a shard of another N, a whole run, and a merge over a run no merge made
    four = tmp_path / "four"
    evaluate(task="sea-safeguard", model=HashedGuard(), guard="zero-shot",
             data=Path(str(SAMPLE_SAFETY)), output=four, quiet=True, store=False,
             n_resamples=0, shard="3/4")
    assert "is shard 3/4 and" in _refused([a, b, c, four, "--output", out], capsys)
    assert "holds a run that no merge made" in _refused([a, b, c, "--output", other], capsys)
    assert not out.exists()


def test_merge_refuses_a_whole_run_and_data_changed_since(tmp_path, capsys):
    data = tmp_path / "items.jsonl"
    shutil.copy(str(SAMPLE_SAFETY), data)
    shards = _guard_shards(tmp_path, data=data)
    whole = tmp_path / "whole"
    evaluate(task="sea-safeguard", model=HashedGuard(), guard="zero-shot", data=data,
             output=whole, quiet=True, store=False, n_resamples=0)
    assert f"{whole} is a whole run, not a shard" in _refused(
        [*shards, whole, "--output", tmp_path / "m"], capsys)
    data.write_text(data.read_text(encoding="utf-8").replace("neighbour", "neighbor", 1),
                    encoding="utf-8")
    assert "the data the shards read changed since they ran" in _refused(
        [*shards, "--output", tmp_path / "m"], capsys)
