"""bench/gpu.py, the GPU benchmark made ready before a GPU is lent: its --tiny run on CPU (the
whole flow: model, TMLU-sized workload, both harnesses, the table), the offline install from a
wheel folder (with a wheel built here, nothing fetched), and the workload's size."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import gpu  # noqa: E402


def _tiny_wheel(tmp_path: Path) -> Path:
    """A wheel of a one-module project, built offline (setuptools, no build isolation)."""
    project = tmp_path / "project"
    (project / "tinypkg39").mkdir(parents=True)
    (project / "tinypkg39" / "__init__.py").write_text("ANSWER = 39\n")
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "tinypkg39"\nversion = "1.0"\n'
        '[tool.setuptools]\npackages = ["tinypkg39"]\n')
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
                    "--no-index", "-q", "-w", str(wheels), str(project)], check=True)
    assert [w.name for w in wheels.glob("*.whl")] == ["tinypkg39-1.0-py3-none-any.whl"]
    return wheels


def test_installs_from_a_wheel_folder_with_no_index(tmp_path):
    wheels = _tiny_wheel(tmp_path)
    site = tmp_path / "site"
    gpu.install_from_folder(wheels, ["tinypkg39==1.0"], pip_args=("--target", str(site)))
    env = {"PYTHONPATH": str(site)}
    assert gpu.importable("tinypkg39", env=env)
    done = subprocess.run([sys.executable, "-c", "import tinypkg39; print(tinypkg39.ANSWER)"],
                          capture_output=True, text=True, env=env)
    assert done.stdout.strip() == "39"


def test_a_package_missing_from_the_folder_is_one_error_naming_it(tmp_path):
    wheels = _tiny_wheel(tmp_path)
    with pytest.raises(SystemExit, match="installing tinypkg39==2.0 from .* failed"):
        gpu.install_from_folder(wheels, ["tinypkg39==2.0"],
                                pip_args=("--target", str(tmp_path / "site")))
    with pytest.raises(SystemExit, match="no such folder"):
        gpu.install_from_folder(tmp_path / "nowhere", ["tinypkg39"])


def test_the_wheels_follow_dependencies_only_through_what_the_target_lacks():
    """pip resolves accelerate's torch anew (CUDA libraries and all) when asked with
    --ignore-installed; the target's own torch brings its own, so none of them is fetched."""
    def item(name, *requires):
        return {"metadata": {"name": name, "version": "1", "requires_dist": list(requires)}}

    items = [item("accelerate", "torch>=2", "psutil", "pytest; extra == 'dev'"),
             item("torch", "nvidia-cublas; platform_system == 'Linux'", "triton"),
             item("nvidia-cublas"), item("triton"), item("psutil"), item("pytest"),
             item("Matplotlib", "pillow"), item("pillow")]
    got = gpu.lacked(items, ["accelerate", "matplotlib"], {"torch", "transformers"})
    assert got == [("accelerate", "1"), ("Matplotlib", "1"), ("pillow", "1"), ("psutil", "1")]


def test_the_workload_is_tmlu_sized(tmp_path):
    subjects = gpu.write_workload(tmp_path, tiny=False)
    rows = {s: len(gpu._rows(tmp_path / "test" / f"{s}.csv")) for s in subjects}
    assert len(rows) == 37 and sum(rows.values()) == 2981
    assert all((tmp_path / "dev" / f"{s}.csv").exists() for s in subjects)


def _bench(work: Path) -> list[str]:
    return [sys.executable, str(REPO / "bench" / "gpu.py"), "--tiny", "--work", str(work)]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """`gpu.py --tiny` once, and its work folder: the table's test reads what it printed, the
    engine mode's test the lm-eval CLI's samples it left (the same command both ran)."""
    work = tmp_path_factory.mktemp("gpu-bench")
    done = subprocess.run(_bench(work), capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    return done, work


@pytest.mark.slow
@pytest.mark.lm_eval
def test_tiny_run_prints_the_table(tiny_run):
    out = tiny_run[0].stdout
    assert "lm-eval: present" in out  # installed in the test venv: the wheel step is skipped
    assert "12 questions in 3 subjects" in out
    table = [line.split() for line in out.splitlines()
             if line.startswith(("localeval hf ", "lm-eval hf "))]
    assert [t[0] for t in table] == ["localeval", "lm-eval"]
    for t in table:
        wall, rate, ratio = map(float, t[2:5])
        assert wall > 0 and rate > 0 and ratio > 0
        assert t[5] == "12/12"  # the same letters as lm-eval's hf backend
    assert "localeval vllm   skipped" in out and "lm-eval vllm     skipped" in out


def test_what_is_missing_is_named_by_requirement():
    assert gpu.missing(["nopkg39>=1", "pytest"]) == ["nopkg39>=1"]
    needed = gpu.requirements()  # lm-eval at the tested version, and localeval's own
    assert needed[0] == gpu.LM_EVAL and "pydantic>=2.6" in needed
    assert not any(r.startswith(("torch", "transformers")) for r in needed)


@pytest.mark.slow
@pytest.mark.lm_eval
def test_engine_mode_scores_the_requests_lm_evals_cli_makes(tiny_run):
    """Engine mode (a lean wheel folder: lm-eval without its task pipeline) feeds lm-eval's
    model class the contexts of localeval's run: each is, string for string, the context
    lm-eval's own CLI builds for that question, and its letters are the CLI's."""
    # The plain run first (tiny_run's), then engine mode in the same work folder, as before.
    tmp_path = tiny_run[1]
    cli = gpu.letters(tmp_path, "lm-eval hf", tmp_path / "data")
    contexts = {}
    for f in (tmp_path / "lm-eval-hf").rglob("samples_*.jsonl"):
        subject = re.search(r"samples_local_cmmlu_(.+?)_\d{4}-", f.name).group(1)
        for s in map(json.loads, f.read_text(encoding="utf-8").splitlines()):
            index = s["doc"].get("Unnamed: 0", s["doc"].get(""))
            args = [a for a in s["arguments"].values()]
            assert [a["arg_1"] for a in args] == [" A", " B", " C", " D"]
            contexts[f"{subject}/{index}"] = args[0]["arg_0"]
    done = subprocess.run([*_bench(tmp_path), "--lm-eval-engine"], capture_output=True,
                          text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "engine mode" in done.stdout
    requests = [json.loads(line) for line in
                (tmp_path / "requests.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(requests) == len(contexts) == 12
    assert {r["id"]: r["context"] for r in requests} == contexts
    assert gpu.letters(tmp_path, "lm-eval hf", tmp_path / "data") == cli
