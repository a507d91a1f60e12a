"""The command line in a pipeline and in front of a missing file: stdout holds only what a
command promises (tables or JSON; the progress bar, warnings and "wrote …" go to stderr), a
reader that leaves early ends it quietly, every path it is given that is not there is one line
naming it, every option says what it does, and a built-in dataset while the Hub is out of reach
is one line at once instead of the Hub client's retries."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from offline_runs import AlwaysLetter

from localeval import evaluate
from localeval.cli import main, parser

CLI = [sys.executable, "-m", "localeval.cli"]
# the README's guide to the command line (issue 68 moved it out of the README)
README = Path(__file__).resolve().parents[1] / "docs" / "command-line.md"

# A run through the real command line on a stand-in model that answers "A" to everything: the
# whole lifecycle (progress bar included) with nothing to load.
ALWAYS_A = """
import sys
import localeval.run
from localeval.backends.base import Backend, NextLogprobs
from localeval.cli import main

class AlwaysA(Backend):
    identity = {"backend": "always", "model": "always-A"}
    def max_context(self): return None
    def count_tokens(self, prompt): return 0
    def run(self, requests, progress=None):
        return [NextLogprobs(logprobs={c: 0.0 if c.strip() == "A" else -9.0 for c in r.candidates})
                for r in requests]

localeval.run.load_backend = lambda *args, **kwargs: AlwaysA()
sys.exit(main(sys.argv[1:]))
"""


Always = AlwaysLetter  # answers ``letter`` to every question


@pytest.fixture
def two_runs(cmmlu, tmp_path) -> tuple[str, str]:
    folders = []
    for letter in "AB":
        folder = tmp_path / f"run-{letter}"
        evaluate(task="cmmlu", model=Always(letter), data=cmmlu, subjects=["agronomy"], limit=5,
                 quiet=True, output=folder)
        folders.append(str(folder))
    return folders[0], folders[1]


def _readme_jq_filter() -> list[str]:
    """The keys of the README's `localeval run ... --json | jq .metrics.micro`."""
    found = re.search(r"localeval run [^`|]*--json \| jq ((?:\.\w+)+)", README.read_text())
    assert found, "the README's --json pipe example is gone"
    return found.group(1).strip(".").split(".")


def _run_argv(cmmlu: str, model_folder: str, output: Path) -> list[str]:
    return ["run", "--task", "cmmlu", "--data", cmmlu, "--subjects", "agronomy", "--limit", "3",
            "--model", model_folder, "--output", str(output), "--no-report"]


# ------------------------------------------------------------------ stdout: what is promised
def test_the_readmes_json_pipe_reads_json(cmmlu, model_folder, tmp_path):
    """Not --quiet: the progress bar is drawn, on stderr; stdout is results.json alone."""
    argv = [sys.executable, "-c", ALWAYS_A, *_run_argv(cmmlu, model_folder, tmp_path / "r"),
            "--json"]
    # stdout a pipe, as in `| jq`: the commands see no terminal
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    value = json.loads(done.stdout)
    for key in _readme_jq_filter():
        value = value[key]  # what jq prints
    assert value not in (None, {}, [])
    assert "questions" in done.stderr and f"wrote {tmp_path / 'r'}/" in done.stderr


@pytest.mark.slow
def test_the_readmes_json_pipe_on_a_real_model(cmmlu, tiny_llama, tmp_path):
    """The README's line itself: `localeval run ... --json | jq .metrics.micro`."""
    argv = [*CLI, *_run_argv(cmmlu, f"hf:{tiny_llama}", tmp_path / "r"), "--json"]
    # stdout a pipe, as in `| jq`: the commands see no terminal
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    value = json.loads(done.stdout)
    for key in _readme_jq_filter():
        value = value[key]  # what jq prints
    assert value not in (None, {}, [])


def _to_a_closed_pipe(argv: list[str]) -> subprocess.CompletedProcess:
    """Run ``argv`` with stdout a pipe whose reader has already gone (`| head -1` once head has
    its line): every write to stdout fails."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(argv, stdout=write, stderr=subprocess.PIPE, text=True,
                              timeout=120)
    finally:
        os.close(write)


@pytest.mark.parametrize("forms", [
    [["tasks"], ["tasks", "--json"]],
    [["show", "{A}"], ["show", "{A}", "--json"]],
    [["compare", "{A}", "{B}"], ["compare", "{A}", "{B}", "--json"]],
    [["export", "{A}"]],
    [["leaderboard", "--task", "cmmlu"], ["leaderboard", "--task", "cmmlu", "--json"]],
], ids=lambda forms: forms[0][0])
def test_a_reader_that_leaves_early_ends_it_quietly(forms, two_runs):
    a, b = two_runs
    for form in forms:  # as a table and as JSON
        done = _to_a_closed_pipe([*CLI, *(word.format(A=a, B=b) for word in form)])
        assert done.stderr == "", (form, done.stderr)  # no traceback, no "error: Broken pipe"
        assert done.returncode == 0, form  # `set -o pipefail` scripts: `show DIR | head -1`


def test_a_run_whose_reader_left_early_ends_quietly(cmmlu, model_folder, tmp_path):
    argv = [sys.executable, "-c", ALWAYS_A, *_run_argv(cmmlu, model_folder, tmp_path / "r"),
            "--json", "--quiet"]
    done = _to_a_closed_pipe(argv)
    assert "Traceback" not in done.stderr and "Broken pipe" not in done.stderr, done.stderr
    assert "Exception ignored" not in done.stderr
    assert done.returncode == 0
    assert (tmp_path / "r" / "results.json").exists()  # the run itself is whole


# ------------------------------------------------------------------ a path that is not there
COMMANDS_WITHOUT_INPUT_FILES = {"tasks", "guards", "demo"}  # demo writes --output; tasks, guards read nothing


def _missing_path_cases(tmp_path: Path, model_folder: str, run_folder: str
                        ) -> dict[str, tuple[list[str], str]]:
    """command -> (its arguments with one path that is not there, that path)."""
    gone = tmp_path / "not-here"
    topics = tmp_path / "topics.csv"
    topics.write_text("country,topic\nTH,touching a person's head\n", encoding="utf-8")
    texts = tmp_path / "texts.jsonl"
    texts.write_text('{"id": "1", "text": "hello"}\n', encoding="utf-8")
    table = f"{gone}/annotations.csv"
    out = str(tmp_path / "out")
    return {
        "run": (["run", "--task", "cmmlu", "--data", f"{gone}/cmmlu", "--model", model_folder],
                f"{gone}/cmmlu"),
        "compare": (["compare", run_folder, f"{gone}/run-b"], f"{gone}/run-b"),
        "show": (["show", f"{gone}/run"], f"{gone}/run"),
        "export": (["export", f"{gone}/run"], f"{gone}/run"),
        "report": (["report", f"{gone}/run"], f"{gone}/run"),
        "rescore": (["rescore", f"{gone}/run", "--no-store"], f"{gone}/run"),
        "merge": (["merge", run_folder, f"{gone}/run", "--output", out, "--no-store"],
                  f"{gone}/run"),
        "leaderboard": (["leaderboard", "--task", "cmmlu", "--store", f"{gone}/store.sqlite"],
                        f"{gone}/store.sqlite"),
        "forget": (["forget", "--missing", "--store", f"{gone}/store.sqlite"],
                   f"{gone}/store.sqlite"),
        "agreement": (["agreement", "--data", table, "--columns", "a,b"], table),
        "aggregate": (["aggregate", "--data", table, "--columns", "a,b", "--output",
                       f"{out}.csv"], table),
        "build-cultural": (["build-cultural", "--data", table, "--output", out], table),
        "build-cultural --templates": (["build-cultural", "--data", str(topics), "--output", out,
                                        "--templates", f"{gone}/templates.json"],
                                       f"{gone}/templates.json"),
        "diversity": (["diversity", "--data", table, "--output", out], table),
        "train-guard": (["train-guard", "--data", table, "--output", f"{out}.json"], table),
        "contamination": (["contamination", "--model", model_folder, "--data",
                           f"{gone}/texts.jsonl"], f"{gone}/texts.jsonl"),
        "contamination --members": (["contamination", "--model", model_folder, "--data",
                                     str(texts), "--members", f"{gone}/members.csv",
                                     "--output", out], f"{gone}/members.csv"),
        "view": (["view", "--store", f"{gone}/store.sqlite"], f"{gone}/store.sqlite"),
        "view --runs": (["view", "--runs", f"{gone}/runs"], f"{gone}/runs"),
    }


def test_every_command_names_a_missing_path_in_one_line(tmp_path, model_folder, two_runs,
                                                        no_model_load, capsys):
    cases = _missing_path_cases(tmp_path, model_folder, two_runs[0])
    commands = set(parser()._subparsers._group_actions[0].choices)
    assert commands - COMMANDS_WITHOUT_INPUT_FILES == {c.split()[0] for c in cases}, \
        "a new command reads a file: add it here"
    for name, (argv, missing) in cases.items():
        code = main(argv)
        err = capsys.readouterr().err
        assert code != 0, name
        assert err.count("\n") == 1 and err.startswith("error: "), (name, err)
        assert missing in err, (name, err)
        assert re.search(r"no such|not a run folder|does not exist", err, re.I), (name, err)
        assert "finished requests are in the cache" not in err, (name, err)  # nothing ran
    assert not (tmp_path / "not-here").exists()  # reading a leaderboard creates no store


def test_a_folder_where_a_file_belongs_is_one_line(tmp_path, capsys):
    folder = tmp_path / "a-folder.csv"
    folder.mkdir()
    assert main(["agreement", "--data", str(folder), "--columns", "a,b"]) == 2
    assert capsys.readouterr().err == f"error: {folder}: a folder, not a file\n"


def test_every_option_of_every_command_says_what_it_does():
    sub = parser()._subparsers._group_actions[0]
    silent = [f"{name} {a.option_strings[0] if a.option_strings else a.dest}"
              for name, command in sub.choices.items() for a in command._actions
              if not a.help and a.help is not argparse.SUPPRESS]
    assert silent == []


def test_help_shows_a_default_of_zero():
    text = subprocess.run([*CLI, "run", "--help"], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200"}).stdout
    assert re.search(r"--max-failed SHARE .*\(default: 0\.0\)", text)


# ------------------------------------------------------------------ a Hub dataset, offline
PROXIES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def _hub_env(hf_home: Path, **more: str) -> dict[str, str]:
    """The environment without any Hugging Face setting or proxy, a fresh HF_HOME, and ``more``."""
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("HF_", "HUGGINGFACE", "TRANSFORMERS_")) and k not in PROXIES}
    return {**keep, "HF_HOME": str(hf_home), **more}


UNREACHABLE = {"HF_ENDPOINT": "http://127.0.0.1:9"}  # nothing listens there: refused at once
OFFLINE = {"HF_HUB_OFFLINE": "1"}


@pytest.mark.parametrize("task,repo,env", [
    (["--task", "tmlu", "--subjects", "CAP_civics"], "miulab/tmlu", UNREACHABLE),
    (["--task", "sea-safeguard", "--guard", "llamaguard3"], "aisingapore/SEASafeguardBench",
     OFFLINE),
], ids=["tmlu-hub-unreachable", "sea-safeguard-offline-mode"])
def test_a_builtin_dataset_the_hub_cannot_give_is_one_line(task, repo, env, tmp_path,
                                                          model_folder):
    done = subprocess.run([*CLI, "run", *task, "--model", model_folder, "--output",
                           str(tmp_path / "r")], capture_output=True, text=True, timeout=120,
                          env=_hub_env(tmp_path / "empty-hf-home", **env))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr  # no retries, no warnings
    assert f"cannot reach the Hugging Face Hub and dataset '{repo}' is not in the local " \
        "cache" in done.stderr


BUILD_CACHE = """
import sys
from pathlib import Path
import datasets
repo = Path(sys.argv[1])
for split in ("dev", "test"):
    datasets.load_dataset(str(repo), "AST_chemistry", split=split)
"""
READ_FROM_HUB = """
from localeval.data.mcq_loaders import load_hub
data = load_hub("miulab/tmlu", ["AST_chemistry"], {"dev": "dev", "test": "test"})
print(len(data["AST_chemistry"]["dev"]), len(data["AST_chemistry"]["test"]))
"""


def test_a_cached_builtin_dataset_loads_without_the_hub(tmp_path):
    """datasets' cache holds miulab/tmlu (prepared from a local copy in its Hub layout, as the
    Hub would have): with the Hub out of reach it is read at once, with no retry."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    repo = tmp_path / "tmlu"
    (repo / "AST_chemistry").mkdir(parents=True)
    for split, n in (("dev", 5), ("test", 3)):
        rows = [{"id": f"{split}-{i}", "question": f"問題 {i}", "A": "甲", "B": "乙", "C": "丙",
                 "D": "丁", "answer": "B"} for i in range(n)]
        pq.write_table(pa.Table.from_pylist(rows), repo / "AST_chemistry" / f"{split}.parquet")
    (repo / "README.md").write_text(
        "---\nconfigs:\n- config_name: AST_chemistry\n  data_files:\n  - split: dev\n"
        "    path: AST_chemistry/dev.parquet\n  - split: test\n"
        "    path: AST_chemistry/test.parquet\n---\n", encoding="utf-8")
    hf_home = tmp_path / "hf-home"
    subprocess.run([sys.executable, "-c", BUILD_CACHE, str(repo)], check=True,
                   capture_output=True, env=_hub_env(hf_home, **OFFLINE))
    # The local copy was cached under its folder's name; the Hub's is under owner___name.
    (hf_home / "datasets" / "tmlu").rename(hf_home / "datasets" / "miulab___tmlu")
    done = subprocess.run([sys.executable, "-c", READ_FROM_HUB], capture_output=True,
                          text=True, timeout=120, env=_hub_env(hf_home, **UNREACHABLE))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["5", "3"]
    assert "Retry" not in done.stderr
