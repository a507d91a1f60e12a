"""Issue 68: the plugin guide (docs/plugins.md) works the first time. Its two example packages
are written from the guide's own text, installed with pip into one fresh venv (one that sees
this checkout and the test environment's packages, so nothing is downloaded), and the guide's
commands run there as written: the guard that needs no model is listed by `localeval guards`,
runs with no `--model`, and its tables, leaderboard row and viewer row are named by it; the task
is listed by `localeval tasks`, runs on the README's model (the demo's), its numbers are those
the model's own log-probs give, and it re-scores with its rescorable option."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import sysconfig
from pathlib import Path
from types import SimpleNamespace

import pytest
from readme_docs import guide
from tiny_models import REPO

FILE = re.compile(r"<!-- file: (\S+) -->\n```[a-z]+\n(.*?)```", re.S)
SAMPLE = "src/localeval/data/sample/safety/items.jsonl"


def guide_files() -> dict[str, str]:
    """The example package's files as the guide prints them (path -> text)."""
    return dict(FILE.findall(guide("plugins.md")))


def guide_block(after: str) -> str:
    """The guide's ```bash block that follows the line holding ``after``."""
    text = guide("plugins.md")
    return text[text.index(after):].split("```bash\n", 1)[1].split("```", 1)[0]


def test_the_example_packages_are_the_guides_text():
    files = guide_files()
    assert set(files) == {"keyword-guard/pyproject.toml", "keyword-guard/keyword_guard/__init__.py",
                          "true-false-task/pyproject.toml", "true-false-task/true_false/__init__.py",
                          "true-false-task/true_false/statements.jsonl"}
    for path, text in files.items():
        assert (REPO / "examples" / path).read_text(encoding="utf-8") == text, path


def keyword_scores(text: str, words=("fake", "insult", "mock", "poison"), per_word=0.5) -> float:
    """The guide's rule, worked again here: per_word for each listed word a word starts with."""
    found = [w for w in words if re.search(rf"\b{w}", text.lower())]
    return min(1.0, per_word * len(found))


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory) -> SimpleNamespace:
    """A fresh venv with the guide's two packages pip-installed (one pip call for both, the
    slow part shared by the guard's test and the task's)."""
    root = tmp_path_factory.mktemp("plugin-guide")
    for path, text in guide_files().items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    # the venv sees this checkout's localeval and the test environment's packages (torch, pip,
    # setuptools) through a .pth file: pip installs the packages into the venv alone
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "test-env.pth").write_text(f"{REPO / 'src'}\n{sysconfig.get_paths()['purelib']}\n",
                                       encoding="utf-8")
    python = venv / "bin" / "python"
    (venv / "bin" / "localeval").write_text(f'#!/bin/sh\nexec "{python}" -m localeval.cli "$@"\n')
    (venv / "bin" / "localeval").chmod(0o755)
    assert guide_block("Install it into the environment").strip() == \
        "pip install --no-deps ./examples/keyword-guard"
    assert guide_block("Install it as the guard above").strip() == \
        "pip install --no-deps ./examples/true-false-task"
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "LANG": "C.UTF-8", "HF_HUB_OFFLINE": "1",
           "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "HOME": str(root)}
    done = subprocess.run([str(python), "-m", "pip", "install", "--no-deps",
                           "--no-build-isolation", str(root / "keyword-guard"),
                           str(root / "true-false-task")],
                          capture_output=True, text=True, env=env, cwd=root, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return SimpleNamespace(python=python, venv=venv)


def checkout(fresh_venv: SimpleNamespace, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A folder laid out as the checkout, and the environment of a user of the fresh venv whose
    home (and results store) is this test's own."""
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": f"{fresh_venv.venv / 'bin'}:/usr/bin:/bin", "HOME": str(home),
           "LANG": "C.UTF-8", "LOCALEVAL_STORE": str(home / "store.sqlite"), "COLUMNS": "200",
           "HF_HUB_OFFLINE": "1", "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    work = tmp_path / "checkout"
    work.mkdir()
    (work / "src").symlink_to(REPO / "src")
    return work, env


@pytest.mark.slow
def test_the_guides_guard_package_runs_in_a_fresh_venv(fresh_venv, tmp_path):
    work, env = checkout(fresh_venv, tmp_path)
    home, python = Path(env["HOME"]), fresh_venv.python
    # the guide's commands, as written, from a folder laid out as the checkout
    block = guide_block("Then it is listed")
    ran = subprocess.run(["bash", "-euo", "pipefail", "-c", block], capture_output=True,
                         text=True, env=env, cwd=work, timeout=600)
    assert ran.returncode == 0, ran.stderr[-3000:]

    listed = ran.stdout.split("Guards (--guard NAME")[1]
    row = next(line for line in listed.splitlines() if "keyword-guard" in line)
    assert "classifier" in row and "package keyword-guard" in row
    assert "words='fake,insult,mock,poison'" in row and "per_word=0.5" in row
    assert "llamaguard3" in listed and "panuthept/IRIS" in listed

    run = work / "runs" / "keyword-guard"
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    assert config["model"] == "none:keyword-guard"  # no --model was given
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    assert [r["model"] for r in results["table2"]["rows"]] == ["keyword-guard"]  # Table 2's row
    samples = [json.loads(line) for line in (run / "samples.jsonl").open(encoding="utf-8")]
    assert samples and any(s["score"] > 0 for s in samples)
    for s in samples:  # each score worked by hand from the guide's rule
        text = s["response"] if s["kind"] == "response" else s["prompt"]
        assert s["score"] == keyword_scores(text), s
    strict = [json.loads(line) for line in
              (work / "runs" / "keyword-guard-strict" / "samples.jsonl").open(encoding="utf-8")]
    for s in strict:
        text = s["response"] if s["kind"] == "response" else s["prompt"]
        assert s["score"] == keyword_scores(text, ("fake", "poison", "mock"), 1.0), s

    names = _leaderboard_names(ran.stdout)
    assert "keyword-guard · sea-safeguard · data safety/items.jsonl" in names, names
    assert not any(" on " in n for n in names), names

    # the viewer's row: its Runs page over the store these runs were recorded in
    page = subprocess.run(
        [str(python), "-c", "import sys\nfrom starlette.testclient import TestClient\n"
         "from localeval.web.app import make_app\nfrom localeval.web.catalog import Catalog\n"
         "c = TestClient(make_app(Catalog(sys.argv[1], [])), base_url='http://127.0.0.1')\n"
         "print(c.get('/').text)", str(home / "store.sqlite")],
        capture_output=True, text=True, env=env, cwd=work, timeout=120)
    assert page.returncode == 0, page.stderr[-2000:]
    rows = re.findall(r"<tr data-run=.*?</tr>", page.stdout)
    assert len(rows) == 2 and all("<td>sea-safeguard</td><td>no model</td><td>keyword-guard</td>"
                                  in row for row in rows), rows
    assert "none:keyword-guard" not in page.stdout


def _leaderboard_names(stdout: str) -> list[str]:
    """The run names of the `leaderboard --json` the guide's block prints last."""
    board = json.loads(stdout[stdout.rindex("\n{\n") + 1:])
    return [r["name"] for r in [*board["rows"], *board["apart"]]]


@pytest.fixture(scope="module")
def demo_model(tmp_path_factory) -> Path:
    """The README's ``$MODEL``: the demo's seeded random model, built as ``localeval demo``
    builds it (its model alone, not the demo's runs)."""
    from localeval.demo.mcq import SAMPLE_MCQ, _sample_texts, build_demo_model

    folder = tmp_path_factory.mktemp("demo") / "demo-model"
    return build_demo_model(folder, _sample_texts(Path(str(SAMPLE_MCQ))))


def true_minus_false(model_folder: Path, prompts: list[str]) -> list[float]:
    """log P("True") - log P("False") as the next token after each prompt, from transformers
    directly (not through localeval's backend)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_folder)
    model = AutoModelForCausalLM.from_pretrained(model_folder, dtype=torch.float32).eval()
    out = []
    for prompt in prompts:
        ids = tokenizer(prompt).input_ids
        first = {}
        for word in ("True", "False"):
            with_word = tokenizer(prompt + word).input_ids
            assert with_word[:len(ids)] == ids  # the word's tokens follow the prompt's
            first[word] = with_word[len(ids)]
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0, -1]
        logprobs = torch.log_softmax(logits.double(), dim=-1)
        out.append(float(logprobs[first["True"]] - logprobs[first["False"]]))
    return out


@pytest.mark.slow
def test_the_guides_task_package_runs_in_the_fresh_venv(fresh_venv, demo_model, tmp_path):
    work, env = checkout(fresh_venv, tmp_path)
    (work / "runs" / "demo").mkdir(parents=True)  # where the README's demo puts its model
    (work / "runs" / "demo" / "demo-model").symlink_to(demo_model)
    env["MODEL"] = "hf:runs/demo/demo-model"  # as the README sets it
    block = guide_block("Then `localeval tasks` lists it")
    ran = subprocess.run(["bash", "-euo", "pipefail", "-c", block], capture_output=True,
                         text=True, env=env, cwd=work, timeout=600)
    assert ran.returncode == 0, ran.stderr[-3000:]
    row = next(line for line in ran.stdout.splitlines() if "true-false " in line)
    assert "(from true-false-task)" in row

    statements = [json.loads(line) for line in
                  guide_files()["true-false-task/true_false/statements.jsonl"].splitlines()]
    run = work / "runs" / "true-false"
    samples = [json.loads(line) for line in (run / "samples.jsonl").open(encoding="utf-8")]
    assert [s["id"] for s in samples] == [s["id"] for s in statements]
    prompts = [f"True or false?\n{s['statement']}\n" for s in statements]
    assert [s["prompt"] for s in samples] == prompts  # -T log_prompts=true
    expected = true_minus_false(demo_model, prompts)
    for sample, statement, value in zip(samples, statements, expected, strict=True):
        assert sample["true_minus_false"] == pytest.approx(value, abs=1e-4), sample
        assert sample["said_true"] == (value > 0) and sample["answer"] == statement["answer"]
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    right = [(v > 0) == s["answer"] for v, s in zip(expected, statements, strict=True)]
    assert results["accuracy"] == sum(right) / len(right) and results["n_failed"] == 0
    # what the guide says of the demo's model: "False" likelier for all eight, 50%
    assert not any(s["said_true"] for s in samples) and results["accuracy"] == 0.5

    # rescored at margin -0.13 from the cache: the same log-probs, the line moved
    rescored = work / "runs" / "true-false-margin"
    config = json.loads((rescored / "config.json").read_text(encoding="utf-8"))
    assert config["margin"] == -0.13 and config["rescored_from"]
    results = json.loads((rescored / "results.json").read_text(encoding="utf-8"))
    right = [(v > -0.13) == s["answer"] for v, s in zip(expected, statements, strict=True)]
    assert results["accuracy"] == sum(right) / len(right) == 0.375  # the guide's 37.5%
    # the leaderboard: two protocols, one ranked and the other listed apart with its margin
    # (which one is the reference depends on their finishing times: equal item counts)
    board = ran.stdout.split("true-false leaderboard", 1)[1]
    assert "listed apart" in board and "37.50" in board and "50.00" in board
    assert re.search(r"margin (0\.0 \(ranked: -0\.13\)|-0\.13 \(ranked: 0\.0\))", board)
    assert "margin -0.13" in board  # the rescored run's name says its margin

    # statements of one's own (-T data=...): a bad row is one line, before the model loads
    (work / "mine.jsonl").write_text('{"id": "a", "statement": "Hue is in Vietnam.", '
                                     '"answer": "yes"}\n', encoding="utf-8")
    bad = subprocess.run(["localeval", "run", "--task", "true-false", "--model",
                          "hf:runs/demo/demo-model", "-T", "data=mine.jsonl", "--output",
                          "runs/mine"], capture_output=True, text=True, env=env, cwd=work,
                         timeout=120)
    assert bad.returncode == 2 and bad.stderr.strip() == \
        "error: mine.jsonl, row 1, field 'answer': must be true or false", bad.stderr
