"""Run folders written before results were typed still load: tests/fixtures/runs-71e0daf holds
config.json, results.json and samples.jsonl of every kind of run as commit 71e0daf wrote them
(bench/outputs_unchanged.py made them; paths inside renamed). Each reads back into the record of
its schema with every value as it was (results.json round-trips exactly), and every command
that reads a folder works on it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from localeval.cli import main
from localeval.records.contamination import ContaminationResults
from localeval.records.llm_safety import LLMSafetyResults
from localeval.records.mcq import MCQResults
from localeval.records.safety import SafetyResults
from localeval.store.runs import load_run

OLD = Path(__file__).parent / "fixtures" / "runs-71e0daf"
KINDS = {"cmmlu-likelihood": MCQResults, "cmmlu-generation": MCQResults,
         "contamination": ContaminationResults, "llm-safety": LLMSafetyResults,
         "safety-prompts": SafetyResults, "sea-safeguard": SafetyResults,
         "sea-safeguard-aware": SafetyResults}


@pytest.fixture
def old(tmp_path):
    shutil.copytree(OLD, tmp_path / "old")
    return tmp_path / "old"


@pytest.mark.parametrize("name", sorted(KINDS))
def test_an_old_folder_reads_back_whole(old, name):
    record = load_run(old / name)
    assert record.status == "finished" and isinstance(record.results, KINDS[name])
    assert record.results.data() == json.loads((old / name / "results.json").read_text())
    assert len(record.samples) == len((old / name / "samples.jsonl").read_text().splitlines())


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_command_reads_an_old_folder(old, name, capsys):
    folder = str(old / name)
    assert main(["show", folder]) == 0
    capsys.readouterr()
    assert main(["show", folder, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads((old / name / "results.json")
                                                             .read_text())
    for fmt in ("md", "latex", "csv"):
        assert main(["export", folder, "--format", fmt, "--output",
                     str(old / f"{name}-{fmt}")]) == 0
    assert main(["report", folder]) == 0 and (old / name / "report.html").exists()


def test_old_folders_compare(old, capsys):
    assert main(["compare", str(old / "cmmlu-likelihood"), str(old / "cmmlu-generation")]) == 0
    assert "exact McNemar" in capsys.readouterr().out
    assert main(["compare", str(old / "sea-safeguard"), str(old / "sea-safeguard-aware")]) == 0
    assert "Cultural awareness (Table 3)" in capsys.readouterr().out
