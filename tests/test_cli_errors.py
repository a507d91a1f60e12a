"""A mistake on the command line is one error line naming its cause, before
any model loads: a mistyped command or option, a folder or model that is not there, data given
to the wrong task, a value out of its range, an OS error anywhere; never a traceback, and a
refused run leaves no folder."""

from __future__ import annotations

import pytest
from offline_runs import one_line, run_line, stand_in_model

from localeval.cli import main
from localeval.demo.mcq import SAMPLE_MCQ

STAND_IN = stand_in_model()  # a model folder the checks accept; never loaded


def test_an_error_line_echoes_a_name_of_any_length_cut_short(capsys):
    name = "x" * 100_000
    assert main(["run", "--task", name, "--model", STAND_IN]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and len(err) < 1000, len(err)  # before: 100,227
    assert " characters]…" in err


def test_a_multiple_choice_folder_given_to_safety_prompts(cmmlu, model_folder, no_model_load,
                                                          capsys):
    """It said `subjects.json, row 1: not valid JSON` (the file is valid JSON)."""
    line = run_line(["run", "--task", "safety-prompts", "--data", cmmlu, "--guard",
                     "llamaguard3", "--model", model_folder], capsys)
    assert f"--data {cmmlu} is a multiple-choice folder" in line and "--task cmmlu" in line
    line = run_line(["run", "--task", "safety-prompts", "--data", f"{cmmlu}/subjects.json",
                     "--guard", "llamaguard3", "--model", model_folder], capsys)
    assert "subjects.json, row 1: one JSON document over several lines, not JSON Lines" in line


def test_a_model_folder_without_weights_is_refused_before_the_data(tmp_path, cmmlu, capsys,
                                                                   no_model_load):
    """It failed after a `0/2` progress bar with Hub advice (`hf auth login`)."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "tokenizer.json").write_text("{}")
    line = run_line(["run", "--task", "cmmlu", "--data", cmmlu, "--subjects", "agronomy",
                     "--limit", "2", "--model", f"hf:{folder}"], capsys)
    assert line == (f"error: model folder {folder} has no weights (model.safetensors, "
                    "pytorch_model.bin or a sharded index of them); give the folder that "
                    "save_pretrained wrote")
    (folder / "config.json").unlink()
    assert "has no config.json" in run_line(["run", "--task", "cmmlu", "--model",
                                             f"hf:{folder}"], capsys)


@pytest.mark.parametrize("argv, line", [
    (["run", "--model", "hf:x"], "localeval run: error: the following arguments are required: "
                                 "--task; `localeval run --help` shows the options"),
    (["run", "--task", "cmmlu", "--methd", "likelihood"],
     "localeval run: error: unknown option --methd (did you mean --method?); `localeval run "
     "--help` shows the options"),
    (["show", "a", "b"], "localeval show: error: unexpected argument 'b'; `localeval show "
                         "--help` shows the options"),
])
def test_command_line_mistakes_are_one_line(argv, line, capsys):
    """A forgotten --task printed 25 lines of usage; --methd the top-level usage."""
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert one_line(capsys) == line


def test_an_option_no_model_takes_ends_its_sentence(cmmlu, model_folder, no_model_load,
                                                    capsys):
    line = run_line(["run", "--task", "cmmlu", "--data", cmmlu, "--model", model_folder,
                     "--base-url", "http://127.0.0.1:8000/v1"], capsys)
    assert line.endswith("`localeval run --help` lists each backend's options"), line


def test_show_of_a_folder_that_does_not_exist_says_so(capsys):
    """It said "it has no config.json" of a folder that is not there."""
    assert main(["show", "runs/nope"]) == 2
    assert one_line(capsys).startswith("error: runs/nope does not exist: give a run folder")


@pytest.mark.parametrize("data, task", [
    ("xstest/xstest_prompts.csv", "safety-prompts"),
    ("jbb-multilingual/prompts.jsonl", "safety-prompts"),
    ("xstest/model_completions", "safety-responses")])
def test_a_multiple_choice_task_on_safety_data_names_the_task(data, task, shared, model_folder,
                                                              no_model_load, capsys):
    """`--task cmmlu` on the XSTest CSV said only "missing column 'question'"."""
    assert main(["run", "--task", "cmmlu", "--data", str(shared / "data" / data),
                 "--model", model_folder]) == 2
    line = one_line(capsys)
    assert "missing column 'question' (its columns: id, " in line
    assert line.endswith(f"it holds safety data, which --task {task} reads"), line


def test_a_guards_second_model_not_here_names_its_option(model_folder, no_model_load, capsys):
    """`--guard xguard` offline said "pass hf:<its folder>": the translator is named by a guard
    option, not by --model."""
    from localeval.demo.safety import SAMPLE_SAFETY

    assert main(["run", "--task", "sea-safeguard", "--data", str(SAMPLE_SAFETY), "--guard",
                 "xguard", "--classify", "prompt", "--guard-option",
                 "translator=nobody/no-such-translator", "--model", model_folder]) == 2
    line = one_line(capsys)
    assert "the translator 'nobody/no-such-translator' is not in the local cache" in line
    assert "pass --guard-option translator=<its folder> (translator=none" in line
    assert "hf:<its folder>" not in line


def test_a_model_not_here_still_gets_the_hf_folder_advice(no_model_load, capsys):
    assert main(["run", "--task", "tmlu", "--model", "hf:nobody/no-such-model"]) == 2
    assert one_line(capsys).endswith("and pass --model hf:<its folder>")


@pytest.mark.parametrize("extra, named, way", [
    (["--judge-model", "hf:nobody/no-judge", "--refusal", "detector"],
     "the judge 'nobody/no-judge'", "--judge-model hf:<its folder>"),
    (["--judge-model", "MODEL", "--refusal", "judge", "--refusal-judge-model",
      "vllm:nobody/no-refusal-judge"],
     "the refusal judge 'nobody/no-refusal-judge'", "--refusal-judge-model vllm:<its folder>")])
def test_a_judge_not_here_names_its_option(extra, named, way, model_folder, no_model_load,
                                           capsys):
    """A judge not on this machine said "pass hf:<its folder>", naming neither the option
    that names the judge nor the judge (the run's own model reads the same line)."""
    from localeval.demo.safety import SAMPLE_SAFETY

    extra = [model_folder if x == "MODEL" else x for x in extra]
    assert main(["run", "--task", "llm-safety", "--data", str(SAMPLE_SAFETY), "--model",
                 model_folder, *extra]) == 2
    line = one_line(capsys)
    assert f"{named} is not in the local cache" in line, line
    assert line.endswith(f"and pass {way}"), line


def test_an_embedder_not_here_names_its_option_and_kind(tmp_path, capsys):
    """`diversity --embedder st:…` offline said "pass hf:<its folder>": neither its option
    nor its kind (an hf: folder is not an embedder)."""
    table = tmp_path / "t.csv"
    table.write_text("text,g\nhello,a\nworld,b\n")
    assert main(["diversity", "--data", str(table), "--by", "g", "--output",
                 str(tmp_path / "out"), "--embedder", "st:nobody/no-embedder"]) == 2
    line = one_line(capsys)
    assert "the embedder 'nobody/no-embedder' is not in the local cache" in line, line
    assert line.endswith("and pass --embedder st:<its folder>"), line


@pytest.mark.parametrize("argv", [["rnu"], ["--debug", "rnu", "--task", "tmlu"]])
def test_a_mistyped_command_gets_its_did_you_mean(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    line = one_line(capsys)
    assert line.startswith("localeval: error: unknown command 'rnu' (did you mean run? the "
                           "commands: tasks, guards, run, "), line


def test_leaderboard_of_a_mistyped_task_gets_its_did_you_mean(tmp_path, capsys):
    from offline_runs import safeguard_run

    safeguard_run(tmp_path / "run", limit=1)  # the store exists, with one task
    assert main(["leaderboard", "--task", "cmmu"]) == 2
    assert "(did you mean cmmlu? it holds sea-safeguard)" in one_line(capsys)
    assert main(["leaderboard", "--task", "sea-safegaurd"]) == 2
    assert "(did you mean sea-safeguard? it holds sea-safeguard)" in one_line(capsys)


def test_offline_without_data_points_at_the_item_format_and_the_sample(model_folder,
                                                                       no_model_load,
                                                                       monkeypatch, capsys):
    import localeval.data.hub
    from localeval.data.safety import SAMPLE_ITEMS

    monkeypatch.setattr(localeval.data.hub, "hub_unreachable", lambda *a, **k: True)
    monkeypatch.setattr(localeval.data.hub, "dataset_cached", lambda *a, **k: False)
    assert main(["run", "--task", "sea-safeguard", "--guard", "zero-shot",
                 "--model", model_folder]) == 2
    line = one_line(capsys)
    assert "or pass --data with a local copy: a folder in the Hub's layout, or a JSONL/CSV/" \
           "Parquet file of items (README, \"Local items\"), such as the bundled sample " \
           f"{SAMPLE_ITEMS}" in line, line


@pytest.mark.parametrize("argv, message", [
    (["--task", "tmlu", "--limit", "-1"], "--limit must be at least 1, not -1"),
    (["--task", "tmlu", "--limit", "0"], "--limit must be at least 1, not 0"),
    (["--task", "sea-safeguard", "--limit", "0"], "--limit must be at least 1, not 0"),
    (["--task", "tmlu", "--max-failed", "-0.5"], "--max-failed is a share of the samples"),
    (["--task", "tmlu", "--top-logprobs", "-1"], "--top-logprobs must be at least 1"),
    (["--task", "sea-safeguard", "--bootstrap", "-10"], "--bootstrap must be 0 (no CIs) or"),
    (["--task", "sea-safeguard", "--sensitive", "maybe"], "--sensitive must be one of iris, paper"),
    (["--task", "llm-safety", "--sensitive", "maybe", "--judge-model", "hf:x"],
     "--sensitive must be one of iris, paper"),
])
def test_bad_values_are_one_line_before_anything_loads(argv, message, model_folder, capsys,
                                                       no_model_load):
    assert main(["run", *argv, "--model", model_folder, "--data", str(SAMPLE_MCQ),
                 "--no-store"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_a_refused_run_leaves_no_folder(tmp_path, capsys):
    assert main(["run", "--task", "tmlu", "--data", str(SAMPLE_MCQ), "--model",
                 f"hf:{tmp_path / 'nowhere'}", "--no-store"]) == 2  # default runs/tmlu/…
    assert "model folder" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_an_output_folder_under_a_file_is_one_line(tmp_path, capsys, model_folder,
                                                   no_model_load):
    (tmp_path / "plain").write_text("x")
    assert main(["run", "--task", "tmlu", "--data", str(SAMPLE_MCQ), "--model", model_folder,
                 "--output", str(tmp_path / "plain" / "sub"), "--no-store"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a file, not a folder" in err


def test_an_os_error_anywhere_is_one_line(monkeypatch, capsys):
    import localeval.cli.commands

    def full(*args):
        raise OSError(28, "No space left on device", "/runs/x/samples.jsonl.tmp")
    monkeypatch.setattr(localeval.cli.commands, "run_and_report", full)
    assert main(["run", "--task", "tmlu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left on device (/runs/x/samples.jsonl.tmp)" in err
