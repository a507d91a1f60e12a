"""Issue 61: what a run is. A benchmark's own options are its runs' defaults from the command
line as from Python, a flag contradicting one it fixes is refused, and the default run folder of
a run without a benchmark is the folder it always was (the same command resumes it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import localeval.run
from localeval import evaluate
from localeval.backends.base import Backend, Generated
from localeval.cli import main, parser, task_options
from localeval.cli.run_options import backend_options, default_output, role_options
from localeval.demo.mcq import SAMPLE_MCQ
from localeval.errors import LocalevalError
from localeval.tasks.registry import make_task


class SaysB(Backend):
    """A reasoned "我選 B" to every request, whatever it is asked."""

    identity = {"backend": "says-b", "model": "says-b"}

    def run(self, requests, progress=None):
        return [Generated(text="先看選項。\n我選 B") for _ in requests]


def _cli_run(monkeypatch, model_folder: str, output: Path, *flags: str) -> int:
    monkeypatch.setattr(localeval.run, "load_backend", lambda spec, **kw: SaysB())
    return main(["run", "--task", "tmlu-cot", "--data", str(SAMPLE_MCQ), "--model",
                 model_folder, "--output", str(output), "--no-store", "--no-report", "--quiet",
                 *flags])


def test_tmlu_cot_from_the_command_line_runs_its_own_protocol(tmp_path, model_folder,
                                                              monkeypatch, capsys):
    # before: the kind's defaults of every flag not given overrode the benchmark's own, and
    # the README's command ran likelihood without CoT
    assert _cli_run(monkeypatch, model_folder, tmp_path / "cot") == 0
    config = json.loads((tmp_path / "cot" / "config.json").read_text(encoding="utf-8"))
    assert (config["method"], config["prompt"]["cot"], config["prompt"]["style"],
            config["extract"]) == ("generation", True, "tmlu", "tmlu")
    # as the Python API runs it
    python = evaluate(task="tmlu-cot", model=SaysB(), data=str(SAMPLE_MCQ), quiet=True,
                      output=tmp_path / "py", store=False, report=False)
    assert {k: python.config.data()[k] for k in ("method", "prompt", "extract")} == \
        {k: config[k] for k in ("method", "prompt", "extract")}


def test_a_flag_contradicting_a_benchmark_is_refused_in_one_line(tmp_path, model_folder,
                                                                 monkeypatch, capsys):
    for flags, said in ((["--method", "likelihood"], "--method likelihood is not tmlu-cot, "
                         "which fixes --method generation"),
                        (["-T", "cot=false"], "--cot off is not tmlu-cot, which fixes --cot on"),
                        (["--prompt-style", "lm-eval"], "--prompt-style lm-eval is not "
                         "tmlu-cot")):
        assert _cli_run(monkeypatch, model_folder, tmp_path / "refused", *flags) == 2
        err = capsys.readouterr().err.strip()
        assert said in err and len(err.splitlines()) == 1, err
        assert not (tmp_path / "refused").exists()  # refused before any folder is made
    with pytest.raises(LocalevalError, match="is not tmlu-cot"):
        make_task("tmlu-cot", method="likelihood", cot=False)
    # the same value as the benchmark's is no contradiction, and the extraction rule (an
    # answer-only, rescorable option) may differ: rescore does just that
    assert make_task("tmlu-cot", method="generation", cot="true").options.cot is True
    assert make_task("tmlu-cot", extract="strict").config.extraction == "strict"


def _default_folder(*argv: str) -> str:
    args = parser().parse_args(["run", *argv])
    return str(default_output(args.task, args.model, task_options(args), backend_options(args),
                              role_options(args)))


def test_a_run_without_a_benchmark_keeps_its_default_folder():
    # the folders main named before issue 61 (computed there): the same command resumes
    assert _default_folder("--task", "tmlu", "--data", "d", "--model", "hf:m") == \
        "runs/tmlu/m-3d28b66d"
    assert _default_folder("--task", "tmlu", "--model", "hf:org/m", "--method", "generation",
                           "--cot", "--shots", "3", "--batch-size", "4") == "runs/tmlu/m-b3b166fc"
    assert _default_folder("--task", "sea-safeguard", "--model", "hf:g", "--guard",
                           "llamaguard3", "--limit", "5") == "runs/sea-safeguard/g-04fe942e"
    assert _default_folder("--task", "llm-safety", "--model", "hf:t", "--judge-model",
                           "hf:j") == "runs/llm-safety/t-7a24645e"
    # a speed setting never moves the folder
    assert _default_folder("--task", "tmlu", "--data", "d", "--model", "hf:m",
                           "--batch-size", "2", "--concurrency", "3") == "runs/tmlu/m-3d28b66d"
    # tmlu-cot's folder was named after the likelihood run it wrongly was (m-1c1267ea): its
    # runs, generation with CoT, get a folder of their own, and a flag given as its own
    # option's value is the same command
    cot = _default_folder("--task", "tmlu-cot", "--data", "d", "--model", "hf:m")
    assert cot != "runs/tmlu-cot/m-1c1267ea"
    assert cot == _default_folder("--task", "tmlu-cot", "--data", "d", "--model", "hf:m",
                                  "--method", "generation", "--cot")
