"""Another package adds a guard and a backend through entry points (localeval.guards,
localeval.backends): a throwaway package written into a temporary folder (a module and a
``*.dist-info`` with ``entry_points.txt``, put on the path; no pip, no network) is listed by
``run --help`` without being imported, and ``localeval run --guard <its name>`` runs it."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import zlib
from pathlib import Path

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
    assert "hash-guard (from hashguard)" in shown.stdout
    model_help = shown.stdout.split("\n  --model MODEL", 1)[1].split("\n  --", 1)[0]
    assert "moderation, const (" in " ".join(model_help.split())
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

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- the guard and backend tables")[1].split("\n\n")[0]
    lines = dict(line.removeprefix("- ").split(": ", 1) for line in block.splitlines()[1:])
    assert lines == {"guards": ", ".join(GUARDS), "backends": ", ".join(BACKENDS)}
