"""Run folders written by earlier versions still load: tests/fixtures/runs-71e0daf holds
config.json, results.json and samples.jsonl of every kind of run as commit 71e0daf wrote them
(before results were typed), and tests/fixtures/runs-a9a91f9 the same as a9a91f9 wrote them
(before samples were typed: issue 46), with a permuted-options run, `rescore`'s folders and
what `compare --json` printed. bench/outputs_unchanged.py made them; paths inside renamed.
Each folder reads back into the records of its kind with every value as it was (results.json
and every line of samples.jsonl round-trip exactly), and every command that reads a folder
works on it."""

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
from localeval.records.samples import (
    ContaminationSample,
    LLMSafetySample,
    MCQSample,
    SafetySample,
)
from localeval.store.runs import load_run
from localeval.tasks.run_spec import RunSpec

FIXTURES = Path(__file__).parent / "fixtures"
# kind of folder -> its results record and sample record
KINDS = {"cmmlu": (MCQResults, MCQSample), "contamination": (ContaminationResults,
                                                            ContaminationSample),
         "llm-safety": (LLMSafetyResults, LLMSafetySample),
         "safety": (SafetyResults, SafetySample), "sea-safeguard": (SafetyResults, SafetySample)}
FOLDERS = [(version, folder.name) for version in ("runs-71e0daf", "runs-a9a91f9")
           for folder in sorted((FIXTURES / version).iterdir()) if folder.is_dir()]
NEW = "runs-a9a91f9"


def _kind(name: str) -> tuple[type, type]:
    return next(types for prefix, types in KINDS.items() if name.startswith(prefix))


@pytest.fixture
def old(tmp_path):
    for version in ("runs-71e0daf", NEW):
        shutil.copytree(FIXTURES / version, tmp_path / version)
    return tmp_path


def test_every_kind_has_a_folder_written_before_samples_were_typed():
    names = {name for version, name in FOLDERS if version == NEW}
    assert {"cmmlu-likelihood", "cmmlu-generation", "cmmlu-permuted", "contamination",
            "llm-safety", "safety-prompts", "sea-safeguard", "sea-safeguard-aware",
            "cmmlu-generation-rescored", "sea-safeguard-rescored"} <= names


@pytest.mark.parametrize(("version", "name"), FOLDERS)
def test_an_old_folder_reads_back_whole(old, version, name):
    folder = old / version / name
    results_type, sample_type = _kind(name)
    record = load_run(folder)
    assert record.status == "finished" and isinstance(record.results, results_type)
    assert record.results.data() == json.loads((folder / "results.json").read_text())
    lines = (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(record.samples) == len(lines)
    for sample, line in zip(record.samples, lines, strict=True):
        assert type(sample) is sample_type
        assert sample.data() == json.loads(line)  # every key and value, nothing added


@pytest.mark.parametrize(("version", "name"), FOLDERS)
def test_every_command_reads_an_old_folder(old, version, name, capsys):
    folder = str(old / version / name)
    assert main(["show", folder]) == 0
    capsys.readouterr()
    assert main(["show", folder, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads((old / version / name /
                                                              "results.json").read_text())
    for fmt in ("md", "latex", "csv"):
        assert main(["export", folder, "--format", fmt, "--output",
                     str(old / f"{version}-{name}-{fmt}")]) == 0
    assert main(["report", folder]) == 0 and (old / version / name / "report.html").exists()


def test_old_folders_compare(old, capsys):
    runs = old / "runs-71e0daf"
    assert main(["compare", str(runs / "cmmlu-likelihood"), str(runs / "cmmlu-generation")]) == 0
    assert "exact McNemar" in capsys.readouterr().out
    assert main(["compare", str(runs / "sea-safeguard"), str(runs / "sea-safeguard-aware")]) == 0
    assert "Cultural awareness (Table 3)" in capsys.readouterr().out


@pytest.mark.parametrize("pair", [("cmmlu-likelihood", "cmmlu-generation"),
                                  ("sea-safeguard", "sea-safeguard-aware"),
                                  ("sea-safeguard", "sea-safeguard-ge")])
def test_compare_prints_what_a9a91f9_printed(old, pair, capsys):
    """The comparison record dumps the same JSON, key for key and in order, as the dict
    compare returned before it was typed, with both runs' names added first (issue 61)."""
    runs = old / NEW
    assert main(["compare", str(runs / pair[0]), str(runs / pair[1]), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out.replace(str(runs), "/runs-written-by-a9a91f9"))
    names = [printed.pop("name_a"), printed.pop("name_b")]
    assert names == [RunSpec.name_of(json.loads((runs / p / "config.json").read_text()))
                     for p in pair] and names[0] != names[1]
    assert json.dumps(printed, indent=2, ensure_ascii=False) + "\n" == \
        (FIXTURES / NEW / f"compare-{pair[0]}--{pair[1]}.json").read_text()
