"""No file a run creates or replaces follows a symbolic link or truncates a file that is not
ours: the folder's ``.lock``, the ``*.tmp`` files that become config.json, results.json,
samples.jsonl and report.html, the report's figures, the request cache and exported tables
(issue 33 item 1). Before, ``RUN/.lock -> victim.txt`` had a run write its PID over
victim.txt."""

from __future__ import annotations

import os

import pytest
from offline_runs import AlwaysLetter, stand_in_model

import localeval.run
from localeval.cli import main

PRECIOUS = "precious notes, not a run's\n"


STAND_IN = stand_in_model()  # a model folder the checks accept; never loaded


@pytest.fixture
def run_argv(shared, tmp_path, monkeypatch):
    monkeypatch.setattr(localeval.run, "load_backend", lambda spec, **kw: AlwaysLetter("A"))
    monkeypatch.setenv("LOCALEVAL_STORE", str(tmp_path / "store.sqlite"))
    return ["run", "--task", "cmmlu", "--data", str(shared / "data" / "cmmlu"), "--subjects",
            "agronomy", "--limit", "3", "--model", STAND_IN, "--quiet", "--output",
            str(tmp_path / "RUN")]


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "victim.txt"
    path.write_text(PRECIOUS)
    return path


@pytest.mark.parametrize("how", ["symlink", "hard link"])
def test_a_lock_that_is_not_ours_is_refused_untouched(how, run_argv, victim, tmp_path, capsys):
    (tmp_path / "RUN").mkdir()
    (os.symlink if how == "symlink" else os.link)(victim, tmp_path / "RUN" / ".lock")
    assert main(run_argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "RUN/.lock" in err[0] and ("symbolic link" in err[0]
                                                        or "hard link" in err[0]), err
    assert victim.read_text() == PRECIOUS  # before: the run's PID, the notes gone
    assert not (tmp_path / "RUN" / "config.json").exists()


def test_planted_links_where_a_rerun_writes_are_replaced_not_followed(run_argv, victim,
                                                                       tmp_path, capsys):
    assert main(run_argv) == 0
    run = tmp_path / "RUN"
    figures = sorted((run / "report_figures").iterdir())
    planted = [run / f"{name}.tmp" for name in ("config.json", "results.json", "samples.jsonl",
                                                "report.html")] + figures[:2]
    for path in planted:
        path.unlink(missing_ok=True)
        path.symlink_to(victim)
    assert main(run_argv) == 0, capsys.readouterr().err
    assert victim.read_text() == PRECIOUS  # before: each write truncated victim.txt
    for path in planted[:4]:
        assert not os.path.lexists(path)
    for path in planted[4:]:  # the figures are the run's own files again
        assert path.is_file() and not path.is_symlink() and path.stat().st_size > 0


def test_a_cache_that_is_a_link_is_refused(run_argv, victim, tmp_path, capsys):
    assert main(run_argv) == 0
    cache = tmp_path / "RUN" / "cache.sqlite"
    cache.unlink()
    victim.write_text("")  # SQLite takes an empty file for a new database and writes into it
    cache.symlink_to(victim)
    capsys.readouterr()
    assert main(run_argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cache.sqlite is a symbolic link" in err[0], err
    assert victim.read_text() == ""


def test_exported_tables_never_write_through_a_link(run_argv, victim, tmp_path, capsys):
    assert main(run_argv) == 0
    out = tmp_path / "tables"
    assert main(["export", str(tmp_path / "RUN"), "--format", "csv", "--output", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir())
    for name in names:
        (out / name).unlink()
        (out / name).symlink_to(victim)
    assert main(["export", str(tmp_path / "RUN"), "--format", "csv", "--output", str(out)]) == 0
    assert victim.read_text() == PRECIOUS
    assert all((out / n).is_file() and not (out / n).is_symlink() for n in names)


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_a_tools_output_never_writes_through_a_link(suffix, victim, tmp_path):
    from localeval.tools.annotations import aggregate

    data = tmp_path / "ann.csv"
    data.write_text("id,prompt,a,b\n1,p1,safe,safe\n2,p2,harmful,harmful\n", encoding="utf-8")
    out = tmp_path / f"labels{suffix}"
    out.symlink_to(victim)
    aggregate(data, ["a", "b"], out)
    assert victim.read_text() == PRECIOUS  # before: the labels written over victim.txt
    assert out.is_file() and not out.is_symlink() and "harmful" in out.read_text()


def test_a_planted_link_at_a_folder_we_make_is_refused(run_argv, victim, tmp_path, capsys):
    """Issue 48 item 6: before, ``RUN/report_figures -> elsewhere/`` had ``localeval report``
    write the figures into elsewhere/, and ``export --format parquet`` its tables through
    ``OUT/samples -> elsewhere/``."""
    assert main(run_argv) == 0
    run, elsewhere = tmp_path / "RUN", tmp_path / "elsewhere"
    elsewhere.mkdir()
    for path in (run / "report_figures").iterdir():
        path.unlink()
    (run / "report_figures").rmdir()
    (run / "report_figures").symlink_to(elsewhere)
    out = tmp_path / "dataset"
    out.mkdir()
    (out / "samples").symlink_to(elsewhere)
    capsys.readouterr()
    for argv in (["report", str(run)], ["export", str(run), "--format", "parquet", "--output",
                                         str(out)]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "is a symbolic link" in err[0], err
        assert list(elsewhere.iterdir()) == []  # before: the figures (tables) written there


def test_a_runs_folder_that_is_a_link_is_fine(run_argv, tmp_path, capsys):
    """The folder a user names may be a link (``runs -> /mnt/big/runs``): only the paths we
    make inside it may not."""
    (tmp_path / "big").mkdir()
    (tmp_path / "runs").symlink_to(tmp_path / "big")
    argv = [*run_argv[:-1], str(tmp_path / "runs" / "RUN")]
    assert main(argv) == 0
    assert main(["report", str(tmp_path / "runs" / "RUN")]) == 0, capsys.readouterr().err
    assert any((tmp_path / "big" / "RUN" / "report_figures").glob("*.png"))
