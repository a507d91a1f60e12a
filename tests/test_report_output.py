"""``localeval report --output`` writes an .html file and never another file of a run folder:
before, ``report RUN --output RUN/results.json`` wrote HTML over results.json and the run was
gone (issue 33 item 2)."""

from __future__ import annotations

import pytest
from offline_runs import mcq_run

from localeval.cli import main


@pytest.fixture
def two_runs(tmp_path):
    return mcq_run(tmp_path / "a" / "RUN").folder, mcq_run(tmp_path / "b" / "RUN").folder


@pytest.mark.parametrize("name", ["results.json", "samples.jsonl", "config.json",
                                  "cache.sqlite", "notes.txt", "report.htm"])
def test_a_report_over_a_file_that_is_not_html_is_refused(name, two_runs, capsys):
    run = two_runs[0]
    target = run / name
    before = target.read_bytes() if target.exists() else None
    assert main(["report", str(run), "--output", str(target)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "a report is an .html file" in err[0], err
    assert (target.read_bytes() if target.exists() else None) == before
    assert main(["show", str(run), "--json"]) == 0  # the run is whole


@pytest.mark.parametrize("where", ["other.html", "b/report.html"])
def test_an_html_file_in_a_run_folder_is_only_its_own_report(where, two_runs, capsys):
    a, b = two_runs
    target = a / "other.html" if where == "other.html" else b / "report.html"
    before = target.read_bytes() if target.exists() else None
    assert main(["report", str(a), "--output", str(target)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "whose only HTML file is its own report.html" in err[0], err
    assert (target.read_bytes() if target.exists() else None) == before
    # several runs compared: not into one of their folders either
    assert main(["report", str(a), str(b), "--output", str(a / "report.html")]) == 2


def test_its_own_report_and_a_file_elsewhere_are_written(two_runs, tmp_path, capsys):
    a, b = two_runs
    assert main(["report", str(a), "--output", str(a / "report.html")]) == 0
    assert main(["report", str(a), str(b), "--output", str(tmp_path / "both.html")]) == 0
    assert (tmp_path / "both.html").read_text().startswith("<!doctype html>")
