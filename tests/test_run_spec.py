"""Issue 61: what a run is. A benchmark's own options are its runs' defaults from the command
line as from Python, a flag contradicting one it fixes is refused, and the default run folder of
a run without a benchmark is the folder it always was (the same command resumes it)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from offline_runs import AlwaysLetter, HashedGuard, stand_in_model

import localeval.run
from localeval import evaluate
from localeval.backends.base import Backend, Generated
from localeval.backends.config import BackendConfig
from localeval.cli import main, parser, task_options
from localeval.cli.run_options import backend_options, default_output, role_options
from localeval.declared import role_of
from localeval.demo.mcq import SAMPLE_MCQ
from localeval.demo.safety import SAMPLE_SAFETY
from localeval.errors import LocalevalError
from localeval.report.leaderboard import leaderboard
from localeval.rescore import rescore_run
from localeval.store.results_db import task_runs
from localeval.tasks.options import choices_of, option_fields, protocol_fields
from localeval.tasks.registry import make_task
from localeval.tasks.run_spec import RunSpec, task_block
from localeval.views.registry import protocol_facts


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
    # None, an optional option's "not given", leaves the benchmark's own value
    assert make_task("tmlu-cot", prompt_style=None, extract=None).config.extraction == "tmlu"


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


# ------------------------------------------------------------------ protocol facts, by role
# For each kind of task: options a run needs besides its data, and a value other than the
# default for each protocol-role option (with what that value needs, if anything); a choice
# not listed takes another of its Literal choices. An option added to a kind without a value
# here fails the property test below, on purpose.
GENERATION = {"method": "generation"}
REFUSAL_JUDGE = {"refusal": "judge", "refusal_judge_model": "hf:refusal-judge"}
KIND_RUNS: dict[str, dict[str, Any]] = {
    "tmlu": {"base": {}, "values": {
        "limit": 1, "dataset_revision": "v2", "subjects": ["CAP_civics"], "shots": 3,
        "cot": (True, GENERATION), "prompt_style": "lm-eval", "system": "Be brief.",
        "max_tokens": (64, GENERATION), "extract": ("strict", GENERATION),
        "stop_at": ("budget", GENERATION), "max_length": 100, "reduce_few_shot": True,
        "chat_special_tokens": False, "permute_options": 2, "repeats": (2, GENERATION),
        "seed": (7, {**GENERATION, "repeats": 2})}},
    "sea-safeguard": {"base": {}, "values": {
        "limit": 1, "dataset_revision": "v2", "subsets": ["general"], "langs": ["en"],
        "sensitive": "paper", "classify": ["prompt"], "calibrate_on": "th"}},
    "llm-safety": {"base": {"refusal": "detector", "judge_model": "hf:judge"}, "values": {
        "limit": 1, "dataset_revision": "v2", "subsets": ["items"], "langs": ["en"],
        "sensitive": "paper", "judge": "zero-shot", "judge_model": "hf:other-judge",
        "judge_options": {"label_scores": "full"}, "refusal": ("judge", {
            "refusal_judge_model": "hf:refusal-judge"}),
        "refusal_judge_model": ("hf:another", REFUSAL_JUDGE),
        "blank_is_refusal": (True, REFUSAL_JUDGE), "responses": 2, "greedy": True,
        "chat_template": True, "max_tokens": 64, "seed": 7, "system": ("Be brief.",
                                                           {"chat_template": True})}},
    "contamination": {"base": {}, "values": {
        "k": [5.0], "sample": 1, "seed": 1, "drop_longest": 0.5, "dataset_revision": "v2"}},
}
# protocol-role options config.json does not record, so no fact can say them: the bootstrap's
# resamples are in results.json (the leaderboard compares point values, which they leave alone)
NOT_IN_CONFIG = {"n_resamples"}


def _data(kind: str, folder: Path, name: str) -> Any:
    """Each kind's data, as a file or folder under ``folder`` of its own name (another name is
    another data path, so a data fact of its own)."""
    target = folder / name
    if kind == "tmlu":
        shutil.copytree(Path(str(SAMPLE_MCQ)), target)
        return str(target)
    target.mkdir()
    if kind == "sea-safeguard":
        shutil.copy(Path(str(SAMPLE_SAFETY)), target / "items.jsonl")
        return str(target / "items.jsonl")
    if kind == "llm-safety":
        rows = [{"id": "1", "subset": "general", "lang": "en", "prompt": "hello",
                 "label": "safe"},
                {"id": "2", "subset": "general", "lang": "th", "prompt": "a harmful ask",
                 "label": "harmful"}]
    else:
        rows = [{"text": "one two three four"}, {"text": "five six seven eight"}]
    (target / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return [str(target / "items.jsonl")] if kind == "contamination" else \
        str(target / "items.jsonl")


def _config(kind: str, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The results schema and the config.json a run of ``kind`` with ``options`` writes (its
    task's own ``describe``, over the data it loads: no model)."""
    task = make_task(kind, **options)
    return task.results_schema, {**task_block(task, task.load()), "model": "hf:org/m"}


def _facts(kind: str, options: dict[str, Any]) -> dict[str, str]:
    """The protocol facts of that config.json, as the store and the leaderboard read them."""
    schema, config = _config(kind, options)
    return protocol_facts(kind, schema, config)


def _name(kind: str, options: dict[str, Any]) -> str:
    """The name of that run (its spec's: the one namer)."""
    from localeval.tasks.run_spec import RunSpec

    return RunSpec.from_config(_config(kind, options)[1]).name


def _other_value(options_class: type, f: dataclasses.Field, values: dict[str, Any]) -> Any:
    if f.name in values:
        return values[f.name]
    choices = [c for c in choices_of(options_class, f) or () if c != f.default]
    assert choices, f"{options_class.__name__}.{f.name}: give it a value in KIND_RUNS"
    return choices[0]


@pytest.mark.parametrize("kind", sorted(KIND_RUNS))
def test_protocol_facts_tell_every_protocol_option_apart(kind, tmp_path):
    from localeval.tasks.registry import task_class

    declared = KIND_RUNS[kind]
    options_class = task_class(kind).Options
    data = _data(kind, tmp_path, "data")
    told: list[str] = []
    for f in protocol_fields(options_class):
        if f.name in NOT_IN_CONFIG:
            continue
        if f.name == "data":
            value, needs = _data(kind, tmp_path, "other-data"), {}
        elif f.name == "members":  # a file of which texts were in a model's training data
            value, needs = tmp_path / "members.jsonl", {}
            value.write_text('{"id": "1", "member": 1}\n')
        else:
            value = _other_value(options_class, f, declared["values"])
            value, needs = value if isinstance(value, tuple) else (value, {})
        base = {"data": data, **declared["base"], **needs}
        assert base.get(f.name) != value
        facts, other = _facts(kind, base), _facts(kind, {**base, f.name: value})
        assert facts != other, f"{kind}: {f.name}={value!r} left the protocol facts alone"
        # and the name says it: two runs told apart by their facts are told apart by name
        named, other_name = _name(kind, base), _name(kind, {**base, f.name: value})
        assert named != other_name, f"{kind}: {f.name}={value!r} left the name alone: {named}"
        told.append(f.name)
    assert told and not NOT_IN_CONFIG & set(told)
    # an option of another role never is a fact
    for f in option_fields(options_class):
        if role_of(f) == "output":
            base = {"data": data, **declared["base"]}
            assert _facts(kind, base) == _facts(kind, {**base, f.name: not f.default})
            assert _name(kind, base) == _name(kind, {**base, f.name: not f.default})


@pytest.mark.parametrize("kind", sorted(KIND_RUNS))
def test_config_json_is_the_tasks_spec_written_and_reads_back_into_it(kind, tmp_path):
    """A run's config.json task block is written from its spec (``Task.spec``), and reads
    back into that very spec: with the kind's defaults, and with each option given."""
    from localeval.tasks.run_spec import RunSpec

    declared = KIND_RUNS[kind]
    runs = [{}] + [{name: value} for name, value in declared["values"].items()]
    data_given = _data(kind, tmp_path, "data")
    for given in runs:
        name, value = next(iter(given.items()), (None, None))
        value, needs = value if isinstance(value, tuple) else (value, {})
        options = {"data": data_given, **declared["base"], **needs,
                   **({name: value} if name else {})}
        task = make_task(kind, **options)
        data = task.load()
        spec = RunSpec.of_task(task, data)
        assert task_block(task, data) == spec.to_config()
        assert RunSpec.from_config(json.loads(json.dumps(spec.to_config()))) == spec, given


def test_an_llm_safety_runs_safeguard_reads_back_into_its_options(tmp_path):
    """config.json's ``safeguard`` block (App. D.2's LLM + safeguard) reads back into the
    safeguard's own options, typed, so its mode and refinement are said in the run's name
    (before, the whole block was read as the guard's name)."""
    from localeval.tasks.run_spec import RunSpec

    task = make_task("llm-safety", data=_data("llm-safety", tmp_path, "d"), refusal="detector",
                     judge_model="hf:judge", safeguard="llamaguard3", safeguard_model="hf:sg",
                     safeguard_mode="advance-inform", refine="all")
    spec = RunSpec.from_config({**task_block(task, task.load()), "model": "hf:org/target"})
    assert (spec.options.safeguard, spec.options.safeguard_model,
            spec.options.safeguard_mode, spec.options.refine) == \
        ("llamaguard3", "hf:sg", "advance-inform", "all")
    assert spec.name.endswith("safeguard llamaguard3 · safeguard model hf:sg · "
                              "safeguard mode advance-inform · refine all")


@pytest.mark.parametrize("guard,option", [("polyguard", {"reading": "prefill"}),
                                            ("shieldgemma", {"mode": "per-policy"}),
                                            ("a-plugin-guard", {"words": "bomb,kill"})])
def test_a_guard_option_is_a_protocol_fact(guard, option, tmp_path):
    """A guard's own option (PolyGuard's reading, ShieldGemma's mode, a plugin guard's
    keyword argument) changes its scores: two runs of the guard with and without it had
    different names but the same protocol facts, so the leaderboard ranked them as one
    protocol. The option is a fact ("guard options"); how the guard was read stays its own
    facts and is not said twice. A plugin guard's run is read as its config.json records it
    (no plugin installed: a folder is read without its guard)."""
    from localeval.tasks.run_spec import RunSpec

    data = _data("sea-safeguard", tmp_path, "data")
    made = "zero-shot" if guard == "a-plugin-guard" else guard

    def spec(options: dict[str, Any] | None) -> RunSpec:
        given = {} if not options or guard == "a-plugin-guard" else {"guard_options": options}
        config = _config("sea-safeguard", {"data": data, "guard": made, **given})[1]
        if guard == "a-plugin-guard":
            config["guard"] = {"name": guard, "options": dict(options or {})}
        return RunSpec.from_config(config)

    plain, other = spec(None), spec(option)
    facts, other_facts = plain.protocol_facts(), other.protocol_facts()
    assert facts["guard options"] == "none" and \
        other_facts["guard options"] == ",".join(f"{k}={v}" for k, v in option.items())
    assert {k for k in facts if facts[k] != other_facts[k]} == {"guard options"}
    assert plain.name != other.name and plain.name.startswith(f"{guard} on ")
    if guard == "a-plugin-guard":
        return
    read = spec({"label_scores": "full"} if guard != "polyguard" else
                {"label_scores": "full", "reading": "prefill"})
    assert read.protocol_facts()["label scores"] == "full"
    assert read.protocol_facts()["guard options"] == \
        ("reading=prefill" if guard == "polyguard" else "none")  # said once, as read


def test_a_speed_option_keeps_the_run_and_a_protocol_one_does_not():
    """BackendConfig: a speed-role field never moves the default folder (the same command
    resumes); a protocol-role one does."""
    base = ["--task", "tmlu", "--data", "d", "--model", "hf:m"]
    plain = _default_folder(*base)
    for f in dataclasses.fields(BackendConfig):
        value = SPEED_VALUES.get(f.name, BACKEND_VALUES.get(f.name))
        assert value is not None, f"BackendConfig.{f.name}: give it a value here"
        flag = f.metadata.get("flag") or "--" + f.name.replace("_", "-")
        argv = [*base, flag] if f.metadata.get("action") else [*base, flag, value]
        moved = _default_folder(*argv) != plain
        assert moved == (role_of(f) == "protocol"), (f.name, role_of(f))


SPEED_VALUES = {"batch_size": "3", "padding_side": "left", "prefix_reuse": "", "api_key_env": "PATH",
                "concurrency": "2", "rate_limit": "1", "timeout": "5", "max_retries": "1",
                "max_reply_mb": "1", "batch": "", "batch_deadline": "1"}
BACKEND_VALUES = {"revision": "v2", "model_args": "a=1", "dtype": "float16", "device": "cpu",
                  "attn": "sdpa", "base_url": "http://127.0.0.1:1/v1", "top_logprobs": "5",
                  "scoring": "echo", "tokenizer": "tok", "chat_extensions": "vllm",
                  "template_date": "26 Jul 2024"}


# ------------------------------------------------------------------ a rescore is another protocol
def _differs(task: str, store: Path, reference: Path) -> dict[str, list[str]]:
    """Each recorded run's "differs" on the leaderboard of ``task``, by folder name, ranked by
    the protocol of the run in ``reference``."""
    board = leaderboard(task, task_runs(task, store), reference=str(reference))
    return {Path(r["folder"]).name: r["differs"] for r in board["rows"] + board["apart"]}


def test_a_rescored_safeguard_run_is_another_protocol(tmp_path):
    # before: the rescore changed Table 2's cells, yet both runs had the same protocol facts
    store, source = tmp_path / "store.sqlite", tmp_path / "guard"
    record = evaluate(task="sea-safeguard", model=HashedGuard(), data=Path(str(SAMPLE_SAFETY)),
                      output=source, cache=source / "cache.sqlite", quiet=True,
                      n_resamples=0, store=store, report=False)
    rescore_run(source, {"file_rounding": "iris", "one_class": "left-out"},
                output=tmp_path / "rescored", store=store, quiet=True)
    assert record.results.n_failed == 0
    assert _differs("sea-safeguard", store, source) == {
        "guard": [], "rescored": ["one class left-out (ranked: iris)",
                                  "file rounding iris (ranked: none)"]}


def test_an_extraction_rescore_of_tmlu_cot_is_another_protocol(tmp_path):
    store, source = tmp_path / "store.sqlite", tmp_path / "cot"
    evaluate(task="tmlu-cot", model=SaysB(), data=str(SAMPLE_MCQ), output=source,
             cache=source / "cache.sqlite", quiet=True, store=store, report=False)
    rescore_run(source, {"extract": "strict"}, output=tmp_path / "strict", store=store,
                quiet=True)  # the README's `localeval rescore runs/tmlu-cot --extract strict`
    differs = _differs("tmlu-cot", store, source)
    assert differs == {"cot": [], "strict": ["extract strict (ranked: tmlu)"]}


def test_a_reduce_few_shot_run_is_read_back_and_still_not_rescored():
    """MCQOptions.recorded reads --reduce-few-shot (a protocol fact now); rescore still refuses
    such a run, from rescore_problem: which shots fit needed the model's tokenizer."""
    from localeval.tasks.mcq_options import MCQOptions
    from localeval.tasks.registry import task_class
    from localeval.tasks.rescoring import check_change

    recorded = MCQOptions.recorded({"method": "generation", "reduce_few_shot": True}, {})
    assert recorded["reduce_few_shot"] is True
    with pytest.raises(LocalevalError, match="cannot re-plan a run made with --reduce-few-shot"):
        check_change(task_class("tmlu"), recorded, "extract")
    assert MCQOptions.recorded({"method": "generation"}, {})["reduce_few_shot"] is False


# ------------------------------------------------------------------ the run spec (part C)
FIXTURES = Path(__file__).parent / "fixtures"
OLD_FOLDERS = sorted(p.parent for p in FIXTURES.glob("runs-*/*/config.json"))


@pytest.mark.parametrize("folder", OLD_FOLDERS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_old_folder_reads_into_a_run_spec_and_back(folder):
    """One reader maps each config.json layout into a RunSpec; its task block, written from
    it in today's layout, reads back into an equal spec; its facts are the view's."""
    from localeval.tasks.registry import task_kind
    from localeval.tasks.run_spec import RunSpec

    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    spec = RunSpec.from_config(config)
    assert isinstance(spec.options, task_kind(config["task"]).Options)
    assert spec.task == config["task"] and spec.model.model == config["model"]
    assert spec.kind in {"mcq", "safety", "llm-safety", "contamination"}
    assert RunSpec.from_config(spec.to_config()) == spec
    schema = json.loads((folder / "results.json").read_text(encoding="utf-8"))["schema"]
    assert protocol_facts(config["task"], schema, config) == spec.protocol_facts()
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.task = "other"  # type: ignore[misc]


def test_a_run_spec_is_what_the_task_describes_and_reads_its_data_and_roles(tmp_path):
    from localeval.tasks.run_spec import RunSpec

    task = make_task("llm-safety", data=_data("llm-safety", tmp_path, "d"), refusal="detector",
                     judge_model="hf:judge", langs=["en"], limit=1)
    config = {**task_block(task, task.load()), "model": "hf:org/target",
              "backend": {"backend": "hf", "model": "org/target"},
              "model_roles": {"judge": {"model": "hf:judge", "options": {"dtype": "float16"}}},
              "role_backends": {"judge": {"backend": "hf", "model": "judge"}},
              "data_files": {"items.jsonl": {"bytes": 1, "sha256": "ab" * 32}}}
    spec = RunSpec.from_config(config)
    assert spec.kind == "llm-safety" and spec.options.refusal == "detector"
    assert spec.data.langs == ("en",) and spec.data.limit == 1
    assert spec.data.fingerprint == "ab" * 6 and not spec.data.by_path
    assert [(r.role, r.model, dict(r.options)) for r in spec.roles] == \
        [("judge", "hf:judge", {"dtype": "float16"})]
    assert spec.roles[0].backend == {"backend": "hf", "model": "judge"}
    assert RunSpec.from_config(spec.to_config()) == spec
    assert spec.name == ("target · llm-safety · data d/items.jsonl · limit 1 · langs en · judge model "
                         "hf:judge · refusal detector")


def test_the_run_spec_module_is_light():
    """What --help may import: the spec's module imports no pydantic, numpy, httpx, torch,
    matplotlib."""
    import subprocess
    import sys

    probe = ("import sys\nimport localeval.tasks.run_spec\n"
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'pydantic', "
             "'httpx', 'torch', 'matplotlib', 'transformers'}))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_an_option_the_others_need_is_named_not_refused(tmp_path):
    """A CMMLU CoT run needs --prompt-style tmlu (CMMLU's own style has no CoT): naming it
    must not resolve the run without its style (which --cot refuses); the README's own
    command, whose store summary raised that refusal after the run was written."""
    from localeval.tasks.run_spec import RunSpec

    data = tmp_path / "cmmlu"
    shutil.copytree(Path(str(SAMPLE_MCQ)), data)
    task = make_task("cmmlu", data=str(data), method="generation", cot=True,
                     prompt_style="tmlu", shots=0)
    config = {**task_block(task, task.load()), "model": "hf:org/m"}
    columns = RunSpec.columns_of(config, "hf:org/m")
    assert "prompt style tmlu" in columns["options"] and "CoT" in columns["name"], columns


# ------------------------------------------------------------------ one name, one paper protocol
def test_compare_names_both_runs_as_the_leaderboard_does(tmp_path, capsys):
    """compare's notes name each run by its spec (before: the guard on its model, the same for
    a run and its rescore); the comparison record keeps both names."""
    from localeval.tasks.run_spec import RunSpec
    from localeval.views.safety import compare_safety_runs

    source = tmp_path / "guard"
    evaluate(task="sea-safeguard", model=HashedGuard(), data=Path(str(SAMPLE_SAFETY)),
             output=source, cache=source / "cache.sqlite", quiet=True, n_resamples=0,
             report=False, store=None)
    rescore_run(source, {"file_rounding": "iris"}, output=tmp_path / "rounded", quiet=True,
                store=None)
    comparison = compare_safety_runs(source, tmp_path / "rounded", n_resamples=20)
    names = [RunSpec.name_of(json.loads((f / "config.json").read_text(encoding="utf-8")))
             for f in (source, tmp_path / "rounded")]
    assert [comparison.name_a, comparison.name_b] == names
    assert names[0] != names[1] and "file rounding iris" in names[1]
    assert main(["compare", str(source), str(tmp_path / "rounded")]) == 0
    out = capsys.readouterr().out
    assert f"({names[0]})" in out and f"({names[1]})" in out


@pytest.mark.parametrize("task", ["tmlu", "tmlu-cot", "cmmlu", "tmmluplus", "sea-safeguard"])
def test_the_paper_protocol_is_the_spec_of_a_run_given_nothing(task, tmp_path):
    """The paper's protocol is stated once (RunSpec.paper): the facts of a run made with no
    option over the whole Hub data are the facts a run with those options writes, whatever its
    kind; tmlu-cot's are its benchmark's (generation, CoT)."""
    from localeval.tasks.run_spec import RunSpec
    from localeval.views.registry import view_for_task

    paper = view_for_task(task).paper_protocol(task)
    assert paper is not None and paper["data"].startswith("hf://")
    assert paper["limit"] == "none" and paper["dataset revision"] == "none"
    if task == "tmlu-cot":
        assert (paper["method"], paper["cot"], paper["extract"]) == ("generation", "yes", "tmlu")
    if task == "sea-safeguard":
        assert paper["subsets"] == "cultural-cg,cultural-itw,general"
        assert paper["verdict position"] == "authors'" and paper["label scores"] == "top-k"
        # a run over the sample with every default differs from it in its data alone
        made = make_task(task, data=str(SAMPLE_SAFETY))
        config = task_block(made, made.load())
        facts = RunSpec.from_config(config).protocol_facts()
        assert {k for k in paper if paper[k] != facts.get(k)} == {"data"}


def test_config_json_says_verdict_position_with_one_meaning(tmp_path):
    """config.json's ``verdict_position`` is the option (first-label, fixed, or None); the
    guard's words for where it reads its verdict are ``guard.reads_verdict_at`` (before: also
    ``guard.verdict_position``, a second meaning under the same key)."""
    record = evaluate(task="sea-safeguard", model=HashedGuard(), data=Path(str(SAMPLE_SAFETY)),
                      output=tmp_path / "run", quiet=True, n_resamples=0, report=False,
                      store=None, guard_options={"verdict_position": "fixed"}, limit=1)
    config = json.loads((tmp_path / "run" / "config.json").read_text(encoding="utf-8"))
    assert record.results.n_failed == 0
    assert config["verdict_position"] == "fixed"
    assert config["guard"]["options"] == {"verdict_position": "fixed"}
    assert "verdict_position" not in config["guard"]
    assert "generated tokens" in config["guard"]["reads_verdict_at"]


STAND_IN = stand_in_model()  # a model folder the checks accept; never loaded


@pytest.mark.parametrize("task", ["..", ".", "../..", "..hidden", "a/../../b"])
def test_the_default_folder_of_any_task_name_is_under_runs(task, shared, tmp_path, monkeypatch,
                                                           capsys):
    monkeypatch.setattr(localeval.run, "load_backend", lambda spec, **kw: AlwaysLetter("A"))
    assert main(["run", "--task", task, "--data", str(shared / "data" / "cmmlu"), "--subjects",
                 "agronomy", "--limit", "1", "--model", STAND_IN, "--no-store", "--quiet"]) == 0
    # the test runs in tmp_path: before, `--task ..` wrote runs/../tmp-<hash>/ there
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"], capsys.readouterr().err
    (kind,) = (tmp_path / "runs").iterdir()
    assert not kind.name.startswith(".") and len(list(kind.iterdir())) == 1


def test_a_guard_without_a_model_names_its_default_folder():
    # issue 69: the embedding guard's runs went to runs/<task>/own-model-<hash>
    folder = _default_folder("--task", "safety-prompts", "--data", "d",
                             "--guard", "embedding:guards/jbb.json")
    assert folder.startswith("runs/safety-prompts/embedding-jbb-")
    moderation = _default_folder("--task", "sea-safeguard", "--guard", "openai-moderation")
    assert moderation.startswith("runs/sea-safeguard/openai-moderation-")


def test_seed_moves_only_the_folder_of_a_run_that_draws(monkeypatch):
    """Issue 69: --seed (a protocol option) moves no folder of a run that draws nothing, nor
    of one that draws without it; a run that draws nothing refuses it."""
    draws = ("--task", "tmlu", "--data", "d", "--model", "hf:m", "--method", "generation",
             "--repeats", "3")
    unseeded = _default_folder(*draws)
    assert _default_folder(*draws, "--seed", "7") not in (unseeded,
                                                          _default_folder(*draws, "--seed", "8"))
    assert _default_folder("--task", "tmlu", "--data", "d", "--model", "hf:m") == \
        "runs/tmlu/m-3d28b66d"
    with pytest.raises(LocalevalError, match="--seed seeds the sampled draws"):
        make_task("tmlu", data="d", seed=7)
    with pytest.raises(LocalevalError, match="--greedy draws nothing"):
        make_task("llm-safety", greedy=True, seed=7, judge_model="hf:j")


def test_a_guard_that_needs_no_model_is_named_by_itself(tmp_path):
    """Issue 68: a guard whose model is ``none:<name>`` (a plugin's that needs none) runs with
    no --model; its run is named by the guard alone, not "<guard> on <model>"."""
    from localeval.tasks.run_spec import RunSpec

    data = _data("sea-safeguard", tmp_path, "data")
    _, config = _config("sea-safeguard", {"data": data, "guard": "zero-shot"})
    assert RunSpec.from_config(config).name.startswith("zero-shot on m · sea-safeguard")
    alone = RunSpec.from_config({**config, "model": "none:zero-shot"})
    assert alone.name.startswith("zero-shot · sea-safeguard · data ")
    assert RunSpec.columns_of({**config, "model": "none:zero-shot"})["name"] == alone.name
