"""Issue 68: the plugin guide (docs/plugins.md) works the first time. Its example package is
written from the guide's own text, installed with pip into a fresh venv (one that sees this
checkout and the test environment's packages, so nothing is downloaded), and the guide's
commands run there as written: the guard that needs no model is listed by `localeval guards`,
runs with no `--model`, and its tables, leaderboard row and viewer row are named by it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import sysconfig

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


def test_the_example_package_is_the_guides_text():
    files = guide_files()
    assert set(files) == {"keyword-guard/pyproject.toml", "keyword-guard/keyword_guard/__init__.py"}
    for path, text in files.items():
        assert (REPO / "examples" / path).read_text(encoding="utf-8") == text, path


def keyword_scores(text: str, words=("fake", "insult", "mock", "poison"), per_word=0.5) -> float:
    """The guide's rule, worked again here: per_word for each listed word a word starts with."""
    found = [w for w in words if re.search(rf"\b{w}", text.lower())]
    return min(1.0, per_word * len(found))


@pytest.mark.slow
def test_the_guides_package_installs_into_a_fresh_venv_and_runs(tmp_path):
    for path, text in guide_files().items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text, encoding="utf-8")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    # the venv sees this checkout's localeval and the test environment's packages (torch, pip,
    # setuptools) through a .pth file: pip installs the package into the venv alone
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "test-env.pth").write_text(f"{REPO / 'src'}\n{sysconfig.get_paths()['purelib']}\n",
                                       encoding="utf-8")
    python = venv / "bin" / "python"
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
           "LOCALEVAL_STORE": str(home / "store.sqlite"), "COLUMNS": "200",
           "HF_HUB_OFFLINE": "1", "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    install = guide_block("Install it into the environment").strip()
    assert install == "pip install --no-deps ./examples/keyword-guard"
    done = subprocess.run([str(python), "-m", "pip", "install", "--no-deps",
                           "--no-build-isolation", str(tmp_path / "keyword-guard")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    # the guide's commands, as written, from a folder laid out as the checkout
    work = tmp_path / "checkout"
    work.mkdir()
    (work / "src").symlink_to(REPO / "src")
    (venv / "bin" / "localeval").write_text(f'#!/bin/sh\nexec "{python}" -m localeval.cli "$@"\n')
    (venv / "bin" / "localeval").chmod(0o755)
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
