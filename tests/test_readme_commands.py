"""Every `localeval` command in README.md and its guides (tests/readme_docs.py) passes every
check that runs before a model loads:
its options, its data, its output, the model's source. Each command is taken from the README
as written; a tiny local model folder stands in for each model and the data beside the
checkout (or the package's sample in the Hub's layout) for what the Hub would give. A command
passes when the run gets as far as loading its model (or, for a command without one, ends
with exit 0)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from readme_docs import docs_text
from tiny_models import REPO, SHARED

import localeval.run
from localeval.cli import main

MODEL_FLAGS = ("--model", "--judge-model", "--refusal-judge-model")
# Commands that read what an earlier command writes (a finished run folder, a trained guard):
# the commands that write it are checked here; these read it in tests of their own.
READS_EARLIER_OUTPUT = {
    "localeval export runs/guard --format latex --output tables/": "test_export.py",
    "localeval run --task safety-prompts --data ../shared/data/jbb-multilingual/prompts.jsonl "
    "--guard embedding:guard.json": "test_embedding_tools.py",
    # the viewer serves the runs recorded before it until stopped
    "localeval view": "test_viewer.py",
    "localeval view --store postgresql://me@db/evals --runs runs/ --port 8000":
        "test_viewer_postgres.py",
    "localeval rescore runs/tmlu-cot --extract strict": "test_rescore.py",
    "localeval rescore runs/guard --sensitive paper --threshold-rule ge --auprc ap --bootstrap 0":
        "test_rescore.py",
    # the shards' folders, which the recipes' run commands write
    "localeval merge runs/tmlu-shards/* --output runs/tmlu-merged --no-report": "test_shards.py",
    "localeval merge runs/tmlu-shards/* --output runs/k8s-merged --no-report": "test_shards.py",
    # the runs recorded in the results store by the commands before it
    "localeval leaderboard --task sea-safeguard": "test_leaderboard_protocol.py",
    "localeval leaderboard --task sea-safeguard --json": "test_plugin_guide.py",
    # a Ray cluster's head, which the Slurm recipe starts first (test_cluster.py starts one)
    'localeval run --task tmlu --model hf:/shared/models/mymodel --method likelihood '
    '--cluster "$head:6379" --output runs/tmlu-ray --no-report': "test_cluster.py",
    # the plugin guide's example guard, installed by its own test into a venv of its own
    "localeval run --task sea-safeguard --data src/localeval/data/sample/safety/items.jsonl "
    "--guard keyword-guard --output runs/keyword-guard": "test_plugin_guide.py",
    "localeval run --task sea-safeguard --data src/localeval/data/sample/safety/items.jsonl "
    "--guard keyword-guard --guard-option words=fake,poison,mock --guard-option per_word=1 "
    "--output runs/keyword-guard-strict": "test_plugin_guide.py",
    # the plugin guide's example task, installed by the same test into the same venv
    "localeval run --task true-false --model $MODEL -T log_prompts=true --output runs/true-false":
        "test_plugin_guide.py",
    "localeval rescore runs/true-false -T margin=-0.13 --output runs/true-false-margin":
        "test_plugin_guide.py",
    "localeval leaderboard --task true-false": "test_plugin_guide.py",
}
# What a scheduler sets for each of a job's tasks (the shard recipes): the first of three
SCHEDULER = {"$SLURM_ARRAY_TASK_ID": "0", "$SLURM_ARRAY_TASK_COUNT": "3",
             "$JOB_COMPLETION_INDEX": "0"}
# The demo makes its own model and data: nothing of the user's to check before it loads
# (test_end_to_end.py runs it).
NOTHING_TO_CHECK = {"localeval demo"}


class ModelWouldLoad(BaseException):
    """Raised where the model would load: every check before it passed."""


def readme_commands() -> list[str]:
    """Each `localeval …` command of the README's code blocks, continuation lines joined,
    comments, optional `[…]` parts and a trailing `...` left out."""
    commands = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", docs_text(), re.S):
        for line in re.sub(r"\s*\\\n\s*", " ", block).splitlines():
            line = re.sub(r"\s+#.*", "", line).strip()
            line = line.split("&& ")[-1].removeprefix(".venv/bin/")
            if not line.startswith("localeval ") or line.startswith("localeval [-h]"):
                continue
            line = re.split(r"\s{2,}", line)[0]  # `localeval demo   the whole flow …` (help)
            line = re.sub(r"\s*\[[^\]]*\]", "", line).removesuffix("...").strip()
            commands.append(" ".join(line.split()))
    return list(dict.fromkeys(commands))


def as_checked(command: str, folder: Path, tmp_path: Path) -> list[str]:
    """The command's argv with a local model for each model, the shared data for ../shared,
    the checkout's files for src/, the package's sample for the Hub's TMLU and SEA-SafeguardBench, and outputs in tmp_path."""
    from localeval.demo.mcq import SAMPLE_MCQ
    from localeval.demo.safety import SAMPLE_SAFETY

    argv = shlex.split(command)[1:]
    out = []
    for i, word in enumerate(argv):
        for variable, value in SCHEDULER.items():
            word = word.replace(variable, value)
        before = argv[i - 1] if i else ""
        if word == "$MODEL":  # the README's own model variable (the demo's model)
            word = f"hf:{folder}"
        elif before in MODEL_FLAGS and word.split(":")[0] in ("hf", "vllm", "hf-seq2seq"):
            word = f"{word.split(':')[0]}:{folder}"
        elif word.startswith("../shared/"):
            word = str(SHARED / word.removeprefix("../shared/"))
        elif word.startswith("src/localeval/"):  # the checkout's own files (a bundled sample)
            word = str(REPO / word)
        elif before == "--output":
            word = str(tmp_path / "out" / word)
        out.append(word)
    if argv[0] == "run" and "--data" not in argv:  # the Hub's, in its layout
        task = argv[argv.index("--task") + 1]
        out += ["--data", str({"tmlu": SAMPLE_MCQ, "sea-safeguard": SAMPLE_SAFETY}[task])]
    return out


def user_files(tmp_path: Path) -> None:
    """The files a README command names as the user's own, in the layout it describes."""
    (tmp_path / "topics.csv").write_text("country,topic\nTH,touch a person's head\n",
                                         encoding="utf-8")
    (tmp_path / "annotations.csv").write_text(
        "id,prompt,ann1,ann2,ann3,ann4\n1,hello,safe,safe,harmful,safe\n", encoding="utf-8")


def test_the_readme_has_the_commands_this_test_checks():
    commands = readme_commands()
    assert len(commands) >= 20, commands
    for command in [*READS_EARLIER_OUTPUT, *NOTHING_TO_CHECK]:
        assert command in commands, command  # an exception for a command no longer there


@pytest.mark.parametrize("command", [c for c in readme_commands()
                                     if c not in READS_EARLIER_OUTPUT
                                     and c not in NOTHING_TO_CHECK])
def test_a_readme_command_passes_every_check_before_its_model_loads(command, tmp_path,
                                                                     monkeypatch, capsys):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"")
    user_files(tmp_path)

    def would_load(*args, **kwargs):
        raise ModelWouldLoad
    monkeypatch.setattr(localeval.run, "load_backend", would_load)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    argv = as_checked(command, folder, tmp_path)
    try:
        code = main(argv)
    except ModelWouldLoad:
        return
    assert code == 0, (argv, capsys.readouterr().err)


def test_the_readme_says_which_torch_build_to_install():
    """The pin's reason held only where the index's default wheel is the CPU build: the README
    names the CPU index for a stock Linux machine and the CUDA one for a GPU, at the version
    pyproject pins."""
    import tomllib

    pins = [r for r in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
            ["dependencies"] if r.startswith("torch==")]
    assert len(pins) == 1
    text = " ".join(docs_text().split())
    for install in re.findall(r"pip install (?:-q )?torch==\S+", text):
        assert install.split()[-1] == pins[0], install
    assert f"pip install {pins[0]} --index-url https://download.pytorch.org/whl/cpu" in text
    assert "--index-url https://download.pytorch.org/whl/cu" in text
