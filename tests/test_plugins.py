"""Another package adds a guard and a backend through entry points (localeval.guards,
localeval.backends): a throwaway package written into a temporary folder (a module and a
``*.dist-info`` with ``entry_points.txt``, put on the path; no pip, no network) is listed by
``run --help`` without being imported, and ``localeval run --guard <its name>`` runs it."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "src" / "localeval" / "data" / "sample" / "safety" / "items.jsonl"

PLUGIN = '''
import math, sys, zlib

from localeval.backends.base import Backend, Failed, NextLogprobs, ScoreNext
from localeval.backends.failures import Unsupported
from localeval.guards.base import Guard, GuardVerdict

print("plugin imported", file=sys.stderr)


class ConstBackend(Backend):
    """Log-probs of each candidate from a hash of prompt and candidate: the same every run."""

    def __init__(self, target):
        self.identity = {"backend": "const", "model": target}

    def run(self, requests, progress=None):
        out = []
        for i, r in enumerate(requests):
            if isinstance(r, ScoreNext):
                answer = NextLogprobs(logprobs={
                    c: -(zlib.crc32(f"{r.prompt}|{c}".encode()) % 1000) / 100
                    for c in r.candidates})
            else:
                answer = Failed(Unsupported("const answers ScoreNext only"))
            out.append(answer)
            if progress:
                progress(i, answer)
        return out


class HashGuard(Guard):
    name = "hash-guard"
    template_source = "a test plugin"
    verdict_position = "the next token"
    model = "const:fixed"

    def classify(self, conversations, execute):
        texts = [c.response if c.response is not None else c.prompt for c in conversations]
        answers = execute([ScoreNext(t, ("yes", "no")) for t in texts])
        verdicts = []
        for answer in answers:
            yes, no = math.exp(answer.logprobs["yes"]), math.exp(answer.logprobs["no"])
            verdicts.append(GuardVerdict(yes / (yes + no)))
        return verdicts
'''


def _plugin(folder: Path) -> Path:
    """The package ``hashguard`` and its metadata, as pip would leave them in site-packages."""
    folder.mkdir(parents=True)
    (folder / "hashguard.py").write_text(PLUGIN, encoding="utf-8")
    info = folder / "hashguard-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hashguard\nVersion: 0.1\n",
                                   encoding="utf-8")
    (info / "entry_points.txt").write_text(
        "[localeval.guards]\nhash-guard = hashguard:HashGuard\n\n"
        "[localeval.backends]\nconst = hashguard:ConstBackend\n", encoding="utf-8")
    return folder


def _localeval(args: list[str], plugin_path: Path, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(plugin_path), str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
        "LOCALEVAL_STORE": str(home / "store.sqlite"), "LOCALEVAL_CACHE": str(home / "cache"),
        "HOME": str(home), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "localeval.cli", *args], capture_output=True,
                          text=True, env=env, timeout=300)


def test_a_plugin_guard_is_listed_without_being_imported_and_runs(tmp_path):
    plugin = _plugin(tmp_path / "site")
    shown = _localeval(["run", "--help"], plugin, tmp_path)
    assert shown.returncode == 0, shown.stderr
    # as argparse wraps it (a line may break after a hyphen)
    assert "hash-guard (from hashguard)" in " ".join(shown.stdout.split()).replace("- ", "-")
    model_help = shown.stdout.split("\n  --model MODEL", 1)[1].split("\n  --", 1)[0]
    assert "moderation, none, const (" in " ".join(model_help.split())
    assert "plugin imported" not in shown.stderr  # listed from its metadata alone

    out = tmp_path / "run"
    ran = _localeval(["run", "--task", "sea-safeguard", "--guard", "hash-guard", "--data",
                      str(SAMPLE), "--output", str(out), "--bootstrap", "0", "--quiet"],
                     plugin, tmp_path)
    assert ran.returncode == 0, ran.stderr
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert config["backend"] == {"backend": "const", "model": "fixed"}
    samples = [json.loads(line) for line in (out / "samples.jsonl").open(encoding="utf-8")]
    assert samples
    for sample in samples:  # each score worked by hand from the plugin's rule
        text = sample["response"] if sample["kind"] == "response" else sample["prompt"]
        yes, no = (math.exp(-(zlib.crc32(f"{text}|{c}".encode()) % 1000) / 100)
                   for c in ("yes", "no"))
        assert sample["score"] == yes / (yes + no)


def test_localeval_guards_lists_a_plugin_guard_without_importing_it(tmp_path):
    """Issue 68: `localeval guards` was an unknown command, and a plugin guard appeared only in
    the 401 lines of `run --help`: it lists every guard, the plugin's with its package."""
    plugin = _plugin(tmp_path / "site")
    shown = _localeval(["guards", "--json"], plugin, tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "plugin imported" not in shown.stderr  # read from its source text alone
    rows = {r["guard"]: r for r in json.loads(shown.stdout)}
    assert rows["hash-guard"] == {"guard": "hash-guard", "family": "classifier",
                                  "from": "package hashguard", "options": [],
                                  "class": "hashguard:HashGuard", "checkpoints": []}
    assert list(rows)[:2] == ["zero-shot", "zero-shot-verdict"]


def test_a_plugin_cannot_take_a_built_in_name(tmp_path):
    plugin = _plugin(tmp_path / "site")
    points = plugin / "hashguard-0.1.dist-info" / "entry_points.txt"
    points.write_text("[localeval.guards]\nllamaguard3 = hashguard:HashGuard\n", encoding="utf-8")
    shown = _localeval(["run", "--help"], plugin, tmp_path)
    assert shown.returncode == 0
    assert "hashguard declares guard 'llamaguard3'" in shown.stderr
    assert "from hashguard" not in shown.stdout


def test_a_plugin_that_cannot_be_imported_is_one_line(tmp_path):
    plugin = _plugin(tmp_path / "site")
    (plugin / "hashguard.py").write_text("raise ImportError('no such thing')\n",
                                         encoding="utf-8")
    ran = _localeval(["run", "--task", "sea-safeguard", "--guard", "hash-guard", "--data",
                      str(SAMPLE), "--output", str(tmp_path / "run")], plugin, tmp_path)
    assert ran.returncode == 2
    assert "'hash-guard' (hashguard:HashGuard, from hashguard) cannot be loaded" in ran.stderr
    assert "Traceback" not in ran.stderr


def test_the_readme_lists_the_tables():
    from localeval.backends.registry import BACKENDS
    from localeval.guards.registry import GUARDS

    readme = (REPO / "docs" / "plugins.md").read_text(encoding="utf-8")
    block = readme.split("<!-- the guard and backend tables")[1].split("\n\n")[0]
    lines = dict(line.removeprefix("- ").split(": ", 1) for line in block.splitlines()[1:])
    assert lines == {"guards": ", ".join(GUARDS), "backends": ", ".join(BACKENDS)}


TASK_PLUGIN = '''
import json, sys
from dataclasses import dataclass
from pathlib import Path

from localeval.backends.base import ScoreNext
from localeval.render.table import Number, TableBuilder, columns
from localeval.tasks.base import Task
from localeval.tasks.options import TaskOptions, make_options, option
from localeval.views import Ranking, ResultsView

print("task plugin imported", file=sys.stderr)


@dataclass(frozen=True)
class LengthOptions(TaskOptions):
    """Text length (text-length): is a text long?"""

    data: str | None = option(None, "JSONL of id, text")
    min_letters: int = option(3, "gold: a text with more letters than this is long", type=int,
                              rescorable=True)


class LengthView(ResultsView):
    kind = "text-length"
    schema = "lentask.length/1"

    def tables(self, results):
        table = TableBuilder("Length accuracy", columns("n", "accuracy %", text=0))
        table.add(results.n_samples, Number(results["accuracy"], scale=100))
        return [table.build()]

    def store_metrics(self, results):
        return [("accuracy", results["accuracy"], results["n_samples"])]

    def ranking(self, names):
        return Ranking(["accuracy"], "accuracy")


class LengthTask(Task):
    results_schema = LengthView.schema
    Options = LengthOptions
    view = LengthView

    def __init__(self, name="text-length", **options):
        self.name, self.options = name, make_options(LengthOptions, name, options)

    def load(self):
        lines = Path(self.options.data).read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines]

    def plan(self, data, backend):
        return [(row, ScoreNext(row["text"], (" long", " short"))) for row in data]

    def respond(self, planned, execute):
        return execute([request for _, request in planned])

    def score(self, planned, answer):
        row, _ = planned
        gold = len(row["text"]) > self.options.min_letters
        pred = answer.logprobs[" long"] > answer.logprobs[" short"]
        return {"id": row["id"], "gold": gold, "pred": pred, "correct": pred == gold}

    def summarise(self, samples, data, identity):
        right = sum(s["correct"] for s in samples)
        return {"schema": self.results_schema, "task": self.name, "n_samples": len(samples),
                "n_failed": 0, "accuracy": right / len(samples)}

    def describe(self, data):
        return {"task": self.name, "data": self.options.data,
                "min_letters": self.options.min_letters}
'''
TEXTS = {"a": "hi", "b": "hello there", "c": "ok", "d": "a longer sentence", "e": "yes"}


def _task_plugin(folder: Path) -> Path:
    """``hashguard`` (its const backend) and ``lentask``, a task with its own view."""
    plugin = _plugin(folder)
    (plugin / "lentask.py").write_text(TASK_PLUGIN, encoding="utf-8")
    info = plugin / "lentask-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: lentask\nVersion: 0.1\n",
                                   encoding="utf-8")
    (info / "entry_points.txt").write_text("[localeval.tasks]\ntext-length = lentask:LengthTask\n",
                                           encoding="utf-8")
    return plugin


def _length_accuracy(min_letters: int) -> float:
    """By hand, from the const backend's rule: " long" wins when its crc32 value is smaller."""
    def logprob(text: str, candidate: str) -> float:
        return -(zlib.crc32(f"{text}|{candidate}".encode()) % 1000) / 100

    right = [(logprob(t, " long") > logprob(t, " short")) == (len(t) > min_letters)
             for t in TEXTS.values()]
    return sum(right) / len(right)


def test_a_plugin_task_is_listed_without_being_imported_runs_and_rescores(tmp_path):
    plugin = _task_plugin(tmp_path / "site")
    for args in (["tasks"], ["run", "--help"]):
        shown = _localeval(args, plugin, tmp_path)
        assert shown.returncode == 0, shown.stderr
        assert "text-length" in shown.stdout and "task plugin imported" not in shown.stderr
    data = tmp_path / "texts.jsonl"
    data.write_text("".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in TEXTS.items()),
                    encoding="utf-8")
    out = tmp_path / "run"
    ran = _localeval(["run", "--task", "text-length", "--model", "const:fixed", "-T",
                      f"data={data}", "-T", "min_letters=1", "--output", str(out), "--quiet",
                      "--json"], plugin, tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout.split("\nwrote")[0])["accuracy"] == _length_accuracy(1)
    shown = _localeval(["show", str(out)], plugin, tmp_path)
    assert shown.returncode == 0 and "Length accuracy" in shown.stdout, shown.stderr

    # its option declared rescorable: rescore reads it back from config.json and changes it
    again = _localeval(["rescore", str(out), "--output", str(tmp_path / "again"), "--json"],
                       plugin, tmp_path)
    assert again.returncode == 2 and "nothing to change" in again.stderr
    rescored = _localeval(["rescore", str(out), "-T", "min_letters=5", "--output",
                           str(tmp_path / "again"), "--json"], plugin, tmp_path)
    assert rescored.returncode == 0, rescored.stderr
    assert json.loads(rescored.stdout)["accuracy"] == _length_accuracy(5)


# ------------------------------------------------ issue 63 item 8: a plugin at the boundary
@pytest.mark.parametrize("body, said", [
    ("raise RuntimeError('no licence server')", "RuntimeError: no licence server"),
    ("def broken(:\n    pass", "SyntaxError"),
    ("import sys\nsys.exit(3)", "exited (sys.exit(3))"),
    ("import sys\nsys.exit(0)", "exited (sys.exit(0))"),
])
def test_a_plugin_whose_import_fails_any_way_is_one_line(tmp_path, body, said):
    """Before: only an ImportError was one line; a RuntimeError or a SyntaxError was a
    traceback, and ``sys.exit`` ended localeval silently (exit 0 for sys.exit(0))."""
    plugin = _plugin(tmp_path / "site")
    (plugin / "hashguard.py").write_text(body + "\n", encoding="utf-8")
    ran = _localeval(["run", "--task", "sea-safeguard", "--guard", "hash-guard", "--data",
                      str(SAMPLE), "--output", str(tmp_path / "run")], plugin, tmp_path)
    assert ran.returncode == 2, ran.stderr
    assert "Traceback" not in ran.stderr and len(ran.stderr.strip().splitlines()) == 1
    assert "'hash-guard' (hashguard:HashGuard, from hashguard) cannot be loaded" in ran.stderr
    assert said in ran.stderr


BAD_GUARD = '''

import numpy as np


class BadGuard(HashGuard):
    name = "bad-guard"

    def classify(self, conversations, execute):
        verdicts = super().classify(conversations, execute)
        return {mode}
'''


def _bad_guard(tmp_path, mode: str, *options: str) -> tuple[subprocess.CompletedProcess, Path]:
    """``localeval run --guard bad-guard``: the test plugin's guard, its verdicts then made
    into ``mode`` (Python, of ``verdicts``)."""
    plugin = _plugin(tmp_path / "site")
    with (plugin / "hashguard.py").open("a", encoding="utf-8") as module:
        module.write(BAD_GUARD.format(mode=mode))
    points = plugin / "hashguard-0.1.dist-info" / "entry_points.txt"
    points.write_text(points.read_text(encoding="utf-8").replace(
        "[localeval.guards]\n", "[localeval.guards]\nbad-guard = hashguard:BadGuard\n"),
        encoding="utf-8")
    out = tmp_path / "run"
    return _localeval(["run", "--task", "sea-safeguard", "--guard", "bad-guard", "--data",
                       str(SAMPLE), "--output", str(out), "--bootstrap", "0", "--quiet",
                       *options], plugin, tmp_path), out


@pytest.mark.parametrize("mode, said", [
    ("verdicts[1:]", "verdicts for "),  # one fewer than the conversations
    ("[v.score for v in verdicts]", "gave a float, not a GuardVerdict"),
    ("None", "gave NoneType, not a list of GuardVerdict"),
    ("[GuardVerdict(np.array([0.5]))] * len(verdicts)", "score array([0.5]) is not a number"),
    ("[GuardVerdict(0.5, raw={1j}) for v in verdicts]", "raw {1j} is not JSON"),
    ("1 / 0", "raised ZeroDivisionError: division by zero"),
])
def test_a_plugin_guard_s_bad_verdicts_are_one_line(tmp_path, mode, said):
    """Before: too few verdicts, floats instead of verdicts, or a guard that raised were
    each a traceback (or, for too few, a zip's ValueError)."""
    ran, _ = _bad_guard(tmp_path, mode, "--limit", "6")
    assert ran.returncode == 2, ran.stderr
    said_here = [x for x in ran.stderr.splitlines() if x.strip() and x != "plugin imported"]
    assert "Traceback" not in ran.stderr and len(said_here) == 1, ran.stderr
    assert "guard 'bad-guard' (hashguard:BadGuard, from hashguard)" in ran.stderr, ran.stderr
    assert said in ran.stderr, ran.stderr
    if mode == "verdicts[1:]":
        given, asked = map(int, re.search(r"gave (\d+) verdicts for (\d+) conv", ran.stderr
                                          ).groups())
        assert given == asked - 1


def test_a_plugin_guard_s_numpy_values_are_numbers_and_lists(tmp_path):
    """Before: a numpy float32 score failed every sample ("not a number") and a numpy array
    in ``raw`` stopped the run writing samples.jsonl (not JSON serializable)."""
    ran, out = _bad_guard(tmp_path, "[GuardVerdict(np.float32(0.25), raw={'p': np.array("
                          "[0.25, 0.75]), 'n': np.int64(2)}) for v in verdicts]")
    assert ran.returncode == 0, ran.stderr
    samples = [json.loads(line) for line in (out / "samples.jsonl").open(encoding="utf-8")]
    assert samples and all(s["score"] == 0.25 and s["guard_output"] == {"p": [0.25, 0.75],
                                                                          "n": 2}
                           for s in samples), samples[0]


def test_a_guard_that_needs_no_model_runs_without_one_and_refuses_one():
    """Issue 68: a guard whose model is ``none:<name>`` needed a dummy --model; now the run
    takes its none: backend, and a --model given anyway is one line."""
    from types import SimpleNamespace

    from localeval.backends.registry import load_backend
    from localeval.errors import LocalevalError
    from localeval.run import choose_model

    task = SimpleNamespace(name="sea-safeguard", default_model="none:keyword-guard")
    assert choose_model(task, None) == "none:keyword-guard"
    with pytest.raises(LocalevalError, match="needs no model .* leave out --model"):
        choose_model(task, "hf:some/model")
    backend = load_backend("none:keyword-guard")
    assert backend.identity == {"backend": "none", "model": "keyword-guard"}
    assert [r.reason.kind for r in backend.run(["a request"])] == ["unsupported"]
