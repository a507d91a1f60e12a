"""The command line a user meets in the first hour: every check before the model loads, safe
run folders, task defaults, lookups, piped and JSON output, inspectable safety samples."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from offline_runs import one_line

from localeval.cli import main
from localeval.declared import parse_declared

CLI = [sys.executable, "-m", "localeval.cli"]


def run_args(cmmlu, model, *more):
    return ["run", "--task", "cmmlu", "--data", cmmlu, "--subjects", "agronomy", "--limit", "2",
            "--model", model, *more]


# ------------------------------------------------------------------ checks before the model
def test_output_naming_a_file(tmp_path, cmmlu, tiny_llama, no_model_load, capsys):
    (tmp_path / "afile").write_text("x")
    assert main(run_args(cmmlu, f"hf:{tiny_llama}", "--output", str(tmp_path / "afile"))) == 2
    assert one_line(capsys) == (f"error: --output {tmp_path / 'afile'} is a file; give a folder "
                                "(made if missing)")


def test_output_naming_a_folder_with_other_things(tmp_path, cmmlu, tiny_llama, no_model_load,
                                                  capsys):
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "cat.jpg").write_text("x")
    assert main(run_args(cmmlu, f"hf:{tiny_llama}", "--output", str(tmp_path / "photos"))) == 2
    assert "is not empty and holds no run" in one_line(capsys)


def test_cot_without_explanations_says_what_to_do(cmmlu, tiny_llama, no_model_load, capsys):
    assert main(run_args(cmmlu, f"hf:{tiny_llama}", "--method", "generation", "--cot",
                         "--prompt-style", "tmlu")) == 2
    line = one_line(capsys)
    assert "--cot needs an explanation" in line and "pass --shots 0" in line


def test_a_zero_generation_budget_is_refused(cmmlu, tiny_llama, no_model_load, capsys):
    assert main(run_args(cmmlu, f"hf:{tiny_llama}", "--method", "generation",
                         "--max-tokens", "0")) == 2
    assert "--max-tokens must be at least 1, not 0" in one_line(capsys)
    from localeval.backends.base import Generate

    with pytest.raises(ValueError, match="positive integer"):
        Generate("x", max_tokens=0)  # the hf backend would still decode one token


def test_misspelled_subject_suggests_and_lists(cmmlu, tiny_llama, no_model_load, capsys):
    argv = run_args(cmmlu, f"hf:{tiny_llama}")
    argv[argv.index("agronomy")] = "agronmy"
    assert main(argv) == 2
    line = one_line(capsys)
    assert "subject(s) agronmy not found" in line and "did you mean agronomy" in line
    assert "available (67): agronomy, anatomy, ancient_chinese," in line


def test_missing_model_folder_and_unreachable_hub(tmp_path, cmmlu, capsys):
    assert main(run_args(cmmlu, f"hf:{tmp_path / 'nope'}")) == 2
    assert one_line(capsys) == f"error: model folder {tmp_path / 'nope'} not found"
    # The tests run with HF_HUB_OFFLINE=1: a Hub id not in the local cache fails at once.
    assert main(run_args(cmmlu, "hf:Qwen/Qwen2.5-0.5B-Instruct")) == 2
    assert one_line(capsys) == ("error: cannot reach the Hugging Face Hub and "
                                "'Qwen/Qwen2.5-0.5B-Instruct' is not in the local cache; connect, "
                                "or download it on another machine and pass --model hf:<its folder>")


def test_debug_after_the_command_and_version(capsys):
    with pytest.raises(Exception, match="model folder /nowhere not found"):
        main(["run", "--task", "cmmlu", "--model", "hf:/nowhere", "--debug"])
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.startswith("localeval 0.")


def test_help_shows_defaults_and_is_written_for_users():
    out = subprocess.run([*CLI, "run", "--help"], capture_output=True, text=True).stdout
    assert "--shots SHOTS" in out and "(default: 5)" in out
    top = subprocess.run([*CLI, "--help"], capture_output=True, text=True).stdout
    assert top.startswith("usage: localeval") and "localeval demo" in top
    assert "Thin: parses options" not in top  # not the module's docstring


# ------------------------------------------------------------------ task defaults and lookups
def test_each_task_has_its_own_prompt_style_and_table_caption():
    from localeval.tasks.registry import make_task

    assert make_task("cmmlu").config.prompt.style == "lm-eval"
    assert make_task("tmmluplus").config.prompt.style == "lm-eval"
    assert make_task("tmlu").config.prompt.style == "tmlu"
    assert make_task("cmmlu", prompt_style="tmlu").config.prompt.style == "tmlu"


def test_tasks_command_for_safety_tasks_and_json(capsys):
    assert main(["tasks", "sea-safeguard", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["task"] == "sea-safeguard" and "cultural-cg" in row["subsets"]
    assert main(["tasks", "--json"]) == 0
    names = [r["task"] for r in json.loads(capsys.readouterr().out)]
    from localeval.tasks.registry import TASKS

    assert names == list(TASKS)  # the table, in its order: the datasets, their benchmarks …
    assert names[:4] == ["tmlu", "cmmlu", "tmmluplus", "tmlu-cot"]
    assert main(["tasks", "sea-safegaurd"]) == 2
    assert one_line(capsys).startswith("error: unknown task 'sea-safegaurd'; did you mean "
                                       "sea-safeguard?")


def test_model_args_are_typed():
    text = "trust_remote_code=true,low_cpu_mem_usage=False,n=3,x=1.5,name=a"
    assert parse_declared("dict | None", text, "--model-args") == {
        "trust_remote_code": True, "low_cpu_mem_usage": False, "n": 3, "x": 1.5, "name": "a"}
    with pytest.raises(Exception, match="--model-args='oops': expected KEY=VALUE"):
        parse_declared("dict | None", "oops", "--model-args")


# ------------------------------------------------------------------ run folders
@pytest.mark.slow
def test_run_folders_default_resume_and_refuse_other_settings(tmp_path, cmmlu, tiny_llama,
                                                              capsys):
    os.chdir(tmp_path)
    argv = run_args(cmmlu, f"hf:{tiny_llama}", "--quiet")
    assert main(argv) == 0
    (folder,) = (tmp_path / "runs" / "cmmlu").iterdir()
    assert folder.name.startswith(tiny_llama.name + "-") and (folder / "cache.sqlite").exists()
    assert f"wrote {folder.relative_to(tmp_path)}/" in capsys.readouterr().err
    assert main(argv) == 0  # the same command: the same folder, resumed from its cache
    assert f"wrote {folder.relative_to(tmp_path)}/" in capsys.readouterr().err
    assert list((tmp_path / "runs" / "cmmlu").iterdir()) == [folder]
    other = run_args(cmmlu, f"hf:{tiny_llama}", "--output", str(folder), "--shots", "0")
    assert main(other) == 2
    assert "holds a run with other settings (--shots: 5 -> 0)" in one_line(capsys)
    assert main([*other, "--overwrite", "--quiet"]) == 0
    assert json.loads((folder / "config.json").read_text())["prompt"]["shots"] == 0


@pytest.mark.slow
def test_a_cached_rerun_never_loads_the_weights(tmp_path, cmmlu, tiny_llama):
    from localeval import evaluate
    from localeval.backends.hf import HFBackend

    options = dict(task="cmmlu", data=cmmlu, subjects=["agronomy"], limit=3, quiet=True,
                   cache=tmp_path / "c.sqlite")
    first = evaluate(model=HFBackend(str(tiny_llama), device="cpu"), **options)
    backend = HFBackend(str(tiny_llama), device="cpu")
    again = evaluate(model=backend, **options)
    assert backend._model is None  # tokenizer and config only
    assert again.samples == first.samples


# ------------------------------------------------------------------ output
@pytest.mark.slow
def test_piped_tables_are_full_width_and_json_is_json(tmp_path, cmmlu, tiny_llama):
    argv = [*CLI, *run_args(cmmlu, f"hf:{tiny_llama}"), "--subjects",
            "chinese_civil_service_exam,world_religions", "--output", str(tmp_path / "r"),
            "--quiet"]
    out = subprocess.run([*argv, "--all"], capture_output=True, text=True, check=True).stdout
    assert "chinese_civil_service_exam" in out and "…" not in out
    assert any(len(line) > 80 for line in out.splitlines())  # not wrapped at 80 columns
    results = json.loads(subprocess.run([*argv, "--json"], capture_output=True, text=True,
                                        check=True).stdout)
    assert results["schema"] == "localeval.mcq/1" and results["prompt_style"] == "lm-eval"
    shown = subprocess.run([*CLI, "show", str(tmp_path / "r"), "--json"], capture_output=True,
                           text=True, check=True).stdout
    assert json.loads(shown)["metrics"] == results["metrics"]


# ------------------------------------------------------------------ safety samples
@pytest.mark.slow
def test_safety_samples_hold_text_and_raw_guard_output(tmp_path, shared, tiny_llama):
    data = shared / "data" / "xstest" / "model_completions"
    base = ["run", "--task", "safety-responses", "--data", str(data), "--limit", "2",
            "--model", f"hf:{tiny_llama}", "--bootstrap", "0", "--quiet",
            "--classify", "response-with-prompt",
            "--guard-option", "label_scores=full",  # a random model: its labels not top 2
            "--guard-option", "verdict_position=fixed"]
    assert main([*base, "--output", str(tmp_path / "a")]) == 0
    samples = [json.loads(x) for x in (tmp_path / "a" / "samples.jsonl").open()]
    assert len(samples) == 10  # 2 items from each of the five source models
    assert {s["subset"] for s in samples} == {"xstest-gpt4", "xstest-llama2new",
                                              "xstest-llama2orig", "xstest-mistralguard",
                                              "xstest-mistralinstruct"}
    s = samples[0]
    assert s["prompt"] and s["response"] and set(s["guard_output"][0]["logprobs"]) == {
        "Safe", "Harmful"}
    results = json.loads((tmp_path / "a" / "results.json").read_text())
    overall = {(r["kind"], r["subset"]): r["n"] for r in results["overall"]}
    assert overall[("response", "all")] == 10 and overall[("response", "xstest-gpt4")] == 2
    assert main([*base, "--output", str(tmp_path / "b"), "--no-log-samples"]) == 0
    hashed = [json.loads(x) for x in (tmp_path / "b" / "samples.jsonl").open()]
    assert "prompt" not in hashed[0] and len(hashed[0]["prompt_sha256"]) == 64


def test_readme_shows_the_real_help():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "docs" / "command-line.md").read_text(
        encoding="utf-8")
    block = readme.split("<!-- localeval --help (COLUMNS=100)")[1].split("```text\n")[1]
    block = block.split("\n```")[0]
    out = subprocess.run([*CLI, "--help"], capture_output=True, text=True,
                         env={**os.environ, "COLUMNS": "100"}).stdout
    assert block == out.rstrip()


def test_run_prints_its_headline_and_says_where_the_rest_is(tmp_path, capsys):
    """A sea-safeguard run printed ~170 lines and the headline scrolled away: now it prints
    Overall and Table 2, and one line on stderr says how many tables are elsewhere."""
    from offline_runs import safeguard_run

    from localeval.report.console import print_results

    record = safeguard_run(tmp_path / "run")
    left_out = print_results(record.results, everything=False)
    printed = capsys.readouterr().out
    assert "Overall" in printed and "(Table 2 layout)" in printed
    assert "Per language" not in printed and "Threshold sweep" not in printed
    assert left_out >= 6
    assert print_results(record.results, everything=True) == 0
    assert "Per language" in capsys.readouterr().out
