"""What ``localeval --help`` and a command's ``--help`` print: a bare
``localeval`` prints the help, and a switch shows no default that reads as its opposite."""

from __future__ import annotations

import pytest

from localeval.cli import main


def help_of(command: str, capsys, monkeypatch) -> str:
    monkeypatch.setenv("COLUMNS", "200")  # one option a line
    with pytest.raises(SystemExit):
        main([command, "--help"])
    return capsys.readouterr().out


def test_a_switch_shows_no_default_that_reads_as_its_opposite(capsys, monkeypatch):
    """`--no-prefix-reuse … (default: True)` read as if prefix reuse were off."""
    out = help_of("run", capsys, monkeypatch)
    (line,) = [x for x in out.splitlines() if x.strip().startswith("--no-prefix-reuse")]
    assert "default: True" not in line and "prefix reuse off (it is on by default)" in line
    batch = out.split("--batch ", 1)[1].split("\n  --", 1)[0]
    assert "default: False" not in batch
    assert "(default: 5)" in out  # a value's default is still shown


def test_bare_localeval_prints_the_help(capsys):
    assert main([]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("usage: localeval") and "localeval demo" in out.out
    assert out.err == ""
