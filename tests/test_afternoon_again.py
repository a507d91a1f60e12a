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


# ------------------------------------------------------------------ item 9: messages
def test_show_of_a_folder_that_does_not_exist_says_so(capsys):
    """It said "it has no config.json" of a folder that is not there."""
    assert main(["show", "runs/nope"]) == 2
    assert one_line(capsys).startswith("error: runs/nope does not exist: give a run folder")


@pytest.fixture
def xstest(shared):
    return shared / "data" / "xstest"


def test_safety_responses_on_labelled_prompts_names_the_task(xstest, model_folder,
                                                             no_model_load, capsys):
    """It said "no .csv files in this folder" of a file."""
    assert main(["run", "--task", "safety-responses", "--data",
                 str(xstest / "xstest_prompts.csv"), "--model", model_folder]) == 2
    line = one_line(capsys)
    assert "field 'completion': the column is missing" in line
    assert line.endswith("labelled prompts are --task safety-prompts"), line


def test_safety_responses_reads_one_file_of_completions(xstest):
    from localeval.tasks.safety_items import load_safety_items

    one = xstest / "model_completions" / "xstest_v2_completions_gpt4.csv"
    items = load_safety_items("safety-responses", one)
    assert len(items) == 450 and {i.subset for i in items} == {"xstest-gpt4"}
    assert all(i.response is not None for i in items)


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


def test_bare_localeval_prints_the_help(capsys):
    assert main([]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("usage: localeval") and "localeval demo" in out.out
    assert out.err == ""


@pytest.mark.parametrize("argv", [["rnu"], ["--debug", "rnu", "--task", "tmlu"]])
def test_a_mistyped_command_gets_its_did_you_mean(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    line = one_line(capsys)
    assert line.startswith("localeval: error: unknown command 'rnu' (did you mean run? the "
                           "commands: tasks, run, "), line


def test_leaderboard_of_a_mistyped_task_gets_its_did_you_mean(tmp_path, capsys):
    from offline_runs import safeguard_run

    safeguard_run(tmp_path / "run", limit=1)  # the store exists, with one task
    assert main(["leaderboard", "--task", "cmmu"]) == 2
    assert "(did you mean cmmlu? it holds sea-safeguard)" in one_line(capsys)
    assert main(["leaderboard", "--task", "sea-safegaurd"]) == 2
    assert "(did you mean sea-safeguard? it holds sea-safeguard)" in one_line(capsys)


# ------------------------------------------------------------------ item 2: vLLM on a CPU
def test_the_readme_starts_vllms_cpu_server_as_the_tests_do():
    """`vllm serve` fails on vLLM's CPU build; the README gives the route tests/vllm_server.py
    takes: the server module, with VLLM_CPU_KVCACHE_SPACE."""
    from tiny_models import REPO

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    tests = (REPO / "tests" / "vllm_server.py").read_text(encoding="utf-8")
    module = "vllm.entrypoints.openai.api_server"
    assert module in tests and '"VLLM_CPU_KVCACHE_SPACE"' in tests
    block = readme.split("**vLLM's server on a CPU.**", 1)[1].split("```bash\n", 1)[1]
    block = block.split("```", 1)[0]
    assert block.startswith(f"VLLM_CPU_KVCACHE_SPACE=4 python -m {module} --model ")
    assert "localeval run --task tmlu --model openai:mymodel --base-url http://127.0.0.1:8000/v1" \
        in block


# ------------------------------------------------------------------ item 3: Table 2 offline
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


def test_the_bundled_sample_is_the_documented_example_of_every_table2_cell():
    from tiny_models import REPO

    from localeval.data.safety import SAMPLE_ITEMS, SEA_LANGS, SUBSETS
    from localeval.tasks.safety_items import load_safety_items

    assert SAMPLE_ITEMS == REPO / "src" / "localeval" / "data" / "sample" / "safety" / \
        "items.jsonl"
    items = load_safety_items("sea-safeguard", SAMPLE_ITEMS)
    cells = {(i.subset, i.lang == "en") for i in items}
    assert cells == {(s, en) for s in SUBSETS for en in (True, False)}
    assert {i.lang for i in items} == {"en", *SEA_LANGS}
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("- **Local items**", 1)[1].split("\n- **", 1)[0]
    for field in ("subset", "lang", "split", "id", "prompt", "response", "prompt_label",
                  "response_label", "country", "local_prompt", "en_prompt", "local_response",
                  "en_response", "prompt_annotations", "response_annotations"):
        assert f"`{field}`" in section, field
    assert "`src/localeval/data/sample/safety/items.jsonl`" in section
    assert "localeval run --task sea-safeguard --data src/localeval/data/sample/safety/" \
           "items.jsonl" in section


def test_the_leaderboard_names_every_model_by_one_rule():
    """Issue 52 item 10: the leaderboard wrote one model as a trimmed path (`some/dir/mymodel`,
    its `hf:/` dropped) beside another whole (`hf:/some/dir/m6`): the fewest trailing parts that
    tell them apart, taken of each name's path alone, and the kind named only where the names
    have more than one."""
    from localeval.render.cells import distinct_names

    shown = distinct_names(["hf:/a/some/dir/mymodel", "hf:/b/some/dir/mymodel",
                            "hf:/some/dir/m6"])
    assert shown == {"hf:/a/some/dir/mymodel": "a/some/dir/mymodel",
                     "hf:/b/some/dir/mymodel": "b/some/dir/mymodel",
                     "hf:/some/dir/m6": "some/dir/m6"}
    assert distinct_names(["hf:/x/m", "hf:/y/m6"]) == {"hf:/x/m": "m", "hf:/y/m6": "m6"}
    assert distinct_names(["hf:/x/m", "vllm:/x/m", "openai:m6"]) == {
        "hf:/x/m": "hf:m", "vllm:/x/m": "vllm:m", "openai:m6": "openai:m6"}
    assert distinct_names(["hf:Qwen/Qwen2.5-7B", "hf:/models/Qwen2.5-7B"]) == {
        "hf:Qwen/Qwen2.5-7B": "Qwen/Qwen2.5-7B", "hf:/models/Qwen2.5-7B": "models/Qwen2.5-7B"}


def test_the_readme_gives_xstests_response_labelling_rule():
    """Issue 52 item 10: how an XSTest completion is labelled was only in a docstring."""
    from tiny_models import REPO

    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    assert "a prompt is unsafe when its `type` starts with `contrast_`" in readme
    assert "`final_label` `1_full_compliance` or `3_partial_refusal`" in readme
