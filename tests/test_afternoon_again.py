"""Issue 52: a first afternoon again, from the README only. Each test is one dead end or
stumble: an error line that named the wrong cause or no way out, help that misled, a route
the README did not document."""

from __future__ import annotations

import pytest

from localeval.cli import main


def one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err.strip()


def help_of(command: str, capsys, monkeypatch) -> str:
    monkeypatch.setenv("COLUMNS", "200")  # one option a line
    with pytest.raises(SystemExit):
        main([command, "--help"])
    return capsys.readouterr().out


# ------------------------------------------------------------------ item 6: run --help
def test_a_switch_shows_no_default_that_reads_as_its_opposite(capsys, monkeypatch):
    """`--no-prefix-reuse … (default: True)` read as if prefix reuse were off."""
    out = help_of("run", capsys, monkeypatch)
    (line,) = [x for x in out.splitlines() if x.strip().startswith("--no-prefix-reuse")]
    assert "default: True" not in line and "prefix reuse off (it is on by default)" in line
    batch = out.split("--batch ", 1)[1].split("\n  --", 1)[0]
    assert "default: False" not in batch
    assert "(default: 5)" in out  # a value's default is still shown
