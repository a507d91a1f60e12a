"""`localeval rescore`: a finished run scored again from its cached answers, never calling a
model (issue 38 item 3). The backends here answer once for the source run and raise if called
again, so a rescore that asked a model anything would fail."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from localeval import evaluate
from localeval.backends.base import Generated, NextLogprobs, Response
from localeval.cli import main
from localeval.demo.safety import SAMPLE_SAFETY
from localeval.rescore import rescore_run


class Once:
    """Answers a run, then refuses: ``forbid()`` makes every later call raise."""

    def __init__(self, answer):
        self.answer, self.allowed, self.calls = answer, True, 0
        self.identity = {"backend": "once", "model": "once"}

    def forbid(self) -> None:
        self.allowed = False

    def run(self, requests, progress=None):
        if not self.allowed:
            raise AssertionError("rescore called the model")
        self.calls += len(requests)
        return [self.answer(r) for r in requests]


def _says(request) -> Response:
    """"答案是 B" to every question: no letter first (strict), the answer under the TMLU rules."""
    return Generated(text="答案是 B。")


def _guard(request) -> Response:
    digest = hashlib.sha256(json.dumps(request.prompt, ensure_ascii=False).encode()).digest()
    h = int.from_bytes(digest[:4], "big") / 2**32
    return NextLogprobs(logprobs={request.candidates[0]: -3 * h, request.candidates[1]: -1.5})


def _exam(folder: Path) -> Path:
    rows = [{"id": str(i), "question": f"Q{i}?", "A": "a", "B": "b", "C": "c", "D": "d",
             "answer": "B" if i % 2 else "A"} for i in range(6)]
    path = folder / "exam.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def forbidden_loads(monkeypatch):
    """No backend may be loaded by spec either."""
    def refuse(*a, **k):
        raise AssertionError("rescore loaded a model")
    monkeypatch.setattr("localeval.backends.registry.load_backend", refuse)
    monkeypatch.setattr("localeval.run.load_backend", refuse)


def _mcq_source(tmp_path: Path) -> tuple[Path, Once]:
    model = Once(_says)
    folder = tmp_path / "src"
    evaluate(task="my-exam", model=model, data=_exam(tmp_path), shots=0, method="generation",
             extract="strict", output=folder, cache=folder / "cache.sqlite", quiet=True,
             store=False)
    model.forbid()
    return folder, model


def _guard_source(tmp_path: Path) -> Path:
    """A sea-safeguard run on the bundled sample (bootstrap 20), its model then forbidden."""
    guard = Once(_guard)
    source = tmp_path / "guard"
    evaluate(task="sea-safeguard", model=guard, guard="zero-shot", data=Path(str(SAMPLE_SAFETY)),
             output=source, cache=source / "cache.sqlite", quiet=True, n_resamples=20,
             store=False)
    guard.forbid()
    return source


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()
            and not p.name.startswith("cache.sqlite")}


def test_rescore_changes_the_extraction_rule_without_calling_the_model(tmp_path,
                                                                       forbidden_loads):
    source, model = _mcq_source(tmp_path)
    before = _snapshot(source)
    first = json.loads((source / "results.json").read_text())
    assert first["metrics"]["micro"]["acc"] == 0  # strict: no reply starts with its letter
    store = tmp_path / "store.sqlite"
    out = rescore_run(source, {"extract": "tmlu"}, store=store, quiet=True)
    assert out.folder == source.parent / f"{source.name}.rescored-{out.folder.name[-8:]}"
    assert out.results.data()["metrics"]["micro"]["acc"] == 0.5  # 3 of 6 answers are B
    assert {s["extract"] for s in out.samples} != {"strict"}
    config = json.loads((out.folder / "config.json").read_text())
    assert config["rescored_from"]["folder"] == str(source.resolve())
    assert config["rescored_from"]["options"] == {"extract": "tmlu"}
    assert config["extract"] == "tmlu" and config["run"]["status"] == "finished"
    assert out.results.timing["requests_run"] == 0
    assert out.results.timing["requests_cached"] == 6
    assert _snapshot(source) == before  # the source folder as it was
    from localeval.store.results_db import task_runs

    (row,) = task_runs("my-exam", store)  # only the rescored run is recorded, by its folder
    assert row["folder"] == str(out.folder.resolve())


def test_rescore_from_the_command_line_and_its_refusals(tmp_path, forbidden_loads, capsys):
    source, _ = _mcq_source(tmp_path)
    out = tmp_path / "again"
    assert main(["rescore", str(source), "--extract", "tmlu", "--output", str(out),
                 "--no-store", "--quiet", "--no-report"]) == 0
    assert json.loads((out / "results.json").read_text())["metrics"]["micro"]["acc"] == 0.5
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:  # an option that changes the requests: one line
        main(["rescore", str(source), "--shots", "3"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "cannot change --shots" in err and "--extract" in err
    # an option of another kind of task, and its own output folder: one line each
    assert main(["rescore", str(source), "--sensitive", "safe", "--no-store"]) == 2
    assert "may change only --extract" in capsys.readouterr().err
    # nothing changed: what it may change, in one line
    assert main(["rescore", str(source), "--extract", "strict", "--no-store"]) == 2
    err = capsys.readouterr().err
    assert "nothing to change" in err and "already has --extract strict" in err
    assert main(["rescore", str(source), "--extract", "tmlu", "--output", str(source)]) == 2
    assert "is the source run" in capsys.readouterr().err


def test_rescore_needs_the_cached_answers(tmp_path, forbidden_loads, capsys):
    source, _ = _mcq_source(tmp_path)
    empty = tmp_path / "empty.sqlite"
    from localeval.store.cache import RequestCache

    RequestCache(empty).close()
    assert main(["rescore", str(source), "--extract", "tmlu", "--cache", str(empty),
                 "--no-store"]) == 2
    assert "6 of 6 requests are not in" in capsys.readouterr().err


def test_rescore_refuses_edited_data(tmp_path, forbidden_loads, capsys):
    source, _ = _mcq_source(tmp_path)
    with (tmp_path / "exam.jsonl").open("a") as f:
        f.write(json.dumps({"id": "9", "question": "Q9?", "A": "a", "B": "b", "C": "c",
                            "D": "d", "answer": "C"}) + "\n")
    assert main(["rescore", str(source), "--extract", "tmlu", "--no-store"]) == 2
    assert "data files changed" in capsys.readouterr().err


def test_rescore_a_safeguard_run_with_another_label_policy_and_threshold_rule(tmp_path,
                                                                              forbidden_loads):
    source = _guard_source(tmp_path)
    before = _snapshot(source)
    out = rescore_run(source, {"sensitive": "exclude", "threshold_rule": "ge",
                               "n_resamples": 0}, store=False, quiet=True)
    old = json.loads((source / "results.json").read_text())
    new = out.results.data()
    assert new["sensitive"] == "exclude" and new["threshold_rule"] == "ge"
    assert new["n_resamples"] == 0 and old["n_resamples"] == 20
    assert new["n_excluded"] > old["n_excluded"]  # 'sensitive' items now left out
    assert [s["score"] for s in out.samples] == \
        [json.loads(line)["score"] for line in (source / "samples.jsonl").open()]
    assert _snapshot(source) == before


def _other_answers(tmp_path: Path) -> Path:
    """A run of the same model name on the same questions that answered otherwise ("A")."""
    folder = tmp_path / "other"
    evaluate(task="my-exam", model=Once(lambda r: Generated(text="答案是 A。")),
             data=_exam(tmp_path), shots=0, method="generation", extract="strict",
             output=folder, cache=folder / "cache.sqlite", quiet=True, store=False)
    return folder / "cache.sqlite"


def test_a_cache_that_answered_otherwise_is_refused(tmp_path, forbidden_loads, capsys):
    """Issue 48 item 2: another run's cache (same model name) scored X with Y's answers, exit 0
    ("rescored from X": 0.5 under the TMLU rules became 0.5 of the other letters)."""
    source, _ = _mcq_source(tmp_path)
    other = _other_answers(tmp_path)
    assert main(["rescore", str(source), "--extract", "tmlu", "--cache", str(other),
                 "--no-store", "--quiet", "--no-report", "--output", str(tmp_path / "x")]) == 2
    (error,) = [line for line in capsys.readouterr().err.splitlines()
                if line.startswith("error:")]
    assert f"{other}: its answer to sample exam/0 is not the one {source} recorded (output: " \
        "'答案是 B。' in the run, '答案是 A。' in the cache)" in error
    assert not (tmp_path / "x").exists()


def test_an_edited_cache_of_the_run_itself_is_refused(tmp_path, forbidden_loads, capsys):
    import sqlite3

    source, _ = _mcq_source(tmp_path)
    with sqlite3.connect(source / "cache.sqlite") as db:
        db.execute("UPDATE responses SET body = replace(body, '答案是 B', '答案是 C')")
    assert main(["rescore", str(source), "--extract", "tmlu", "--no-store", "--quiet",
                 "--no-report"]) == 2
    assert "its answer to sample exam/0 is not the one" in capsys.readouterr().err


def test_rescore_prints_what_run_prints_and_names_the_flags_it_changed(tmp_path,
                                                                       forbidden_loads, capsys):
    """Issue 52 item 10: rescore printed every table where run prints the headline, and said
    ``n_resamples=0`` after ``--bootstrap 0``."""
    source = _guard_source(tmp_path)
    capsys.readouterr()
    assert main(["rescore", str(source), "--bootstrap", "0", "--threshold-rule", "ge",
                 "--no-store", "--quiet", "--no-report", "--output", str(tmp_path / "a")]) == 0
    headline = capsys.readouterr()
    assert "rescored from" in headline.err and "--bootstrap 0" in headline.err
    assert "--threshold-rule ge" in headline.err and "n_resamples" not in headline.err
    assert "more tables: localeval show" in headline.err
    assert main(["rescore", str(source), "--bootstrap", "0", "--threshold-rule", "ge",
                 "--no-store", "--quiet", "--no-report", "--all",
                 "--output", str(tmp_path / "b")]) == 0
    everything = capsys.readouterr()
    assert len(everything.out) > len(headline.out) and "more tables" not in everything.err
