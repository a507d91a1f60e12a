"""The GPU benchmark, ready before a GPU is lent: localeval against lm-evaluation-harness on a
real-size model over a TMLU-sized workload, whole processes, one table.

    python bench/gpu.py                         # Llama-3-8B shape, bf16, on the GPU
    python bench/gpu.py --wheels /path/wheels   # lm-eval not installed: install it from there
    python bench/gpu.py --tiny                  # the same flow on CPU, tiny shape (tested)
    python bench/gpu.py --make-wheels DIR [--have target-freeze.txt]   # with internet: the folder

Engines, each a whole process: localeval ``hf:`` and lm-eval ``--model hf``; where vLLM imports
(in this Python), localeval ``vllm:`` and lm-eval ``--model vllm`` too (else they are skipped
and the table says so). The table: wall time, workload tokens/s (every question's whole
5-shot prompt, the same count for every engine), the ratio to lm-eval ``hf``'s wall time, and
how many predicted letters equal lm-eval ``hf``'s.

The model: a seeded, randomly initialised ``LlamaForCausalLM`` with Llama-3-8B's shape (32
layers, hidden 4096, MLP 14336, 32 heads, 8 KV heads, RoPE θ 500,000, untied head), built on
the device in bfloat16 and saved once under ``--work``; its vocabulary is the shared SmolLM2
tokenizer's (49,152, not Llama-3's 128,256: no Llama-3 tokenizer is on these machines), so the
embedding and head are 0.4 B parameters smaller than the real model's. ``--tiny``: 2 layers,
hidden 64, float32, CPU.

The workload: TMLU's 37 subjects have 2,981 questions (../shared/data/tmlu-subjects.tsv);
TMLU itself cannot be downloaded here, so each TMLU subject's question count is taken from one
CMMLU subject (the largest subjects to the largest counts), written as a CMMLU folder under
``--work``, 5-shot from its dev split, likelihood scoring, lm-eval's prompt format on both
sides (localeval ``--prompt-style lm-eval``; lm-eval reads the same CSV files through the task
configs of tests/lm_eval_peer.py). ``--tiny``: 3 subjects, 4 questions each.

Machine without internet: PyTorch and transformers installed, no lm-eval (nor vLLM). Make the
wheel folder on a machine with internet and the same Python (``--make-wheels DIR``), copy it
over, and pass ``--wheels``: the script installs what is missing from it with pip
``--no-index`` (nothing is fetched), and says what it did. ``--have`` gives the target's ``pip
freeze``: what it lists is left out of the folder.

- ``--make-wheels DIR``: lm-eval at the version the tests ran against, localeval's declared
  dependencies, and theirs. For a target with only torch 2.13 + transformers 5.24 (CPython
  3.11, x86-64): 64 wheels, 165.5 MiB (lm-eval's own dependencies 130: pyarrow 53, scipy 34,
  pandas 12, scikit-learn 9), over the 64 MiB a device run may carry.
- ``--make-wheels DIR --lean``: lm-eval without its dependencies, the two its model classes
  import (accelerate, dill), and what a localeval run imports (``LEAN``), with theirs. lm-eval's
  task pipeline (``datasets``, ``pyarrow``) is then absent, so its rows run its model classes
  on the same requests (bench/lm_eval_engine.py: ``HFLM``/``VLLM.loglikelihood``, the
  contexts checked equal to its CLI's in tests/test_gpu_bench.py) and the table says so. Which
  mode runs is decided by whether ``datasets`` imports (``--lm-eval-engine``: engine mode
  always). For the same target: 19 wheels, 33.8 MiB; installed offline into a fresh venv of
  torch + transformers alone, ``--tiny`` ran there with 12/12 letters equal.

Why this file is over 300 lines: it is one command to copy to a machine that has nothing else
of ours set up (the wheel folder, the model, the workload, both harnesses, the table).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "src"))  # localeval runs from this checkout, installed or not

from lm_eval_engine import requests_from_samples  # noqa: E402
from lm_eval_peer import write_task_configs  # noqa: E402
from tiny_models import SHARED, save_tokenizer  # noqa: E402

LM_EVAL = "lm-eval==0.4.13"  # the version the parity tests run against
# --lean: what lm-eval's model classes import beyond torch and transformers (accelerate, dill,
# requests), and what a localeval hf:/vllm: run imports (its report's matplotlib among them)
LEAN = ["accelerate", "dill", "requests", "numpy", "rich", "httpx", "pydantic", "matplotlib"]
# lm-eval's hf model class imports accelerate, which its wheel declares only in an extra
SHAPES = {
    "llama3-8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                      num_attention_heads=32, num_key_value_heads=8, rope_theta=500000.0,
                      rms_norm_eps=1e-5, max_position_embeddings=8192),
    "tiny": dict(hidden_size=64, intermediate_size=192, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, rope_theta=500000.0,
                 rms_norm_eps=1e-5, max_position_embeddings=4096),
}


# ------------------------------------------------------------------ lm-eval from a wheel folder
def importable(module: str, python: str = sys.executable, env: dict | None = None) -> bool:
    """Whether ``module`` imports in that Python (a fresh process: what the runs will see)."""
    done = subprocess.run([python, "-c", f"import {module}"], capture_output=True, env=env)
    return done.returncode == 0


def install_from_folder(folder: Path, requirements: list[str], python: str = sys.executable,
                        pip_args: tuple[str, ...] = ()) -> None:
    """pip install ``requirements`` from the wheels in ``folder`` only (``--no-index``: nothing
    is fetched). A missing wheel is pip's one error, raised as SystemExit with its text."""
    if not folder.is_dir():
        raise SystemExit(f"--wheels {folder}: no such folder")
    cmd = [python, "-m", "pip", "install", "--no-index", "--find-links", str(folder),
           "--disable-pip-version-check", *pip_args, *requirements]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"installing {' '.join(requirements)} from {folder} failed:\n"
                         f"{done.stdout[-2000:]}{done.stderr[-2000:]}")


def requirements() -> list[str]:
    """What the benchmark needs beside torch and transformers: lm-eval at the tested version
    and localeval's own dependencies (pyproject.toml; localeval itself runs from this
    checkout's src/)."""
    import tomllib

    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    return [LM_EVAL, "accelerate", *(d for d in deps if _project(re.split(r"[<>=!~ \[;]", d)[0])
                                     not in {"torch", "transformers"})]


def missing(specs: list[str], python: str = sys.executable) -> list[str]:
    """The requirements whose distribution is not installed in that Python (by name)."""
    names = [re.split(r"[<>=!~ \[;]", s)[0] for s in specs]
    probe = ("import importlib.metadata as m, json, sys\n"
             "def has(n):\n"
             "    try:\n        m.version(n)\n        return True\n"
             "    except m.PackageNotFoundError:\n        return False\n"
             f"print(json.dumps([has(n) for n in {names!r}]))")
    found = json.loads(subprocess.run([python, "-c", probe], capture_output=True, text=True,
                                      check=True).stdout)
    return [s for s, ok in zip(specs, found) if not ok]


def ensure_lm_eval(wheels: Path | None, python: str = sys.executable) -> str:
    """'present' when lm-eval and what the runs need are installed (everything, or the lean
    set); else installs what is missing from ``wheels`` ('installed ...'): lm-eval with its
    dependencies from a full folder, without them from a lean one (no ``datasets`` wheel)."""
    full = missing(requirements(), python)
    lacking = missing([LM_EVAL, *LEAN], python)
    if not full or not lacking:
        return "present"
    if wheels is None:
        raise SystemExit(f"not installed here: {', '.join(lacking)}; pass --wheels DIR (a "
                         "folder made with --make-wheels on a machine with internet)")
    if any(wheels.glob("datasets-*.whl")):
        install_from_folder(wheels, full, python)
        lacking = full
    else:
        if LM_EVAL in lacking:
            install_from_folder(wheels, [LM_EVAL], python, ("--no-deps",))
        if rest := [r for r in lacking if r != LM_EVAL]:
            install_from_folder(wheels, rest, python)
    if not importable("lm_eval", python):
        raise SystemExit(f"lm-eval installed from {wheels} but does not import")
    return f"installed {', '.join(lacking)} from {wheels}"


def make_wheels(folder: Path, have: Path | None, lean: bool = False) -> None:
    """Wheels of lm-eval, localeval's dependencies and theirs, each the target lacks: pip resolves the whole set
    for this Python and platform (run it with the target's; ``--dry-run --report`` reads
    metadata only, so torch's wheel is never fetched), the distributions the target's ``pip
    freeze`` lists are dropped, and the rest are fetched (or built), dependencies not
    followed. Prints the folder's size: lm-eval's own dependencies (datasets with pyarrow and
    pandas, scipy, scikit-learn) are most of it."""
    import tempfile

    folder.mkdir(parents=True, exist_ok=True)
    installed = {"torch", "transformers"}  # the premise: the target has both
    if have is not None:
        installed |= {_project(line.split("==")[0]) for line in have.read_text().splitlines()
                      if "==" in line}
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet",
                        "--ignore-installed", "--report", str(report),
                        *(LEAN if lean else requirements())], check=True)
        items = json.loads(report.read_text())["install"]
    roots = LEAN if lean else requirements()
    resolved = lacked(items, [re.split(r"[<>=!~ \[;]", r)[0] for r in roots], installed)
    resolved += [tuple(LM_EVAL.split("=="))] if lean else []  # lm-eval alone, --no-deps
    wanted = [f"{n}=={v}" for n, v in resolved]
    # pip wheel: each distribution's wheel, or one built from its sdist (rouge-score has no
    # wheel on PyPI)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w",
                    str(folder), *wanted], check=True)
    size = sum(w.stat().st_size for w in folder.glob("*.whl")) / 2**20
    print(f"{folder}: {len(wanted)} of {len(resolved)} distributions the target lacks, "
          f"{size:.1f} MiB")


def lacked(items: list[dict], roots: list[str], installed: set[str]) -> list[tuple[str, str]]:
    """(name, version) of each resolved distribution the target lacks, reached from ``roots``
    through distributions it lacks only: what the target has brings its own dependencies (its
    torch its CUDA libraries, which pip would otherwise resolve anew from the index)."""
    from packaging.requirements import Requirement

    by_name = {_project(i["metadata"]["name"]): i["metadata"] for i in items}
    seen, todo = set(), [_project(r) for r in roots]
    while todo:
        name = todo.pop()
        if name in seen or name in installed or name not in by_name:
            continue
        seen.add(name)
        for text in by_name[name].get("requires_dist") or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(_project(req.name))
    return [(by_name[n]["name"], by_name[n]["version"]) for n in sorted(seen)]


def _project(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# ------------------------------------------------------------------ model and workload
def build_model(folder: Path, shape: str, dtype: str, device: str) -> Path:
    """A seeded random Llama of ``shape`` with the shared tokenizer, saved once."""
    if (folder / "config.json").exists():
        return folder
    import torch
    import transformers

    cfg = transformers.LlamaConfig(vocab_size=49152, tie_word_embeddings=False, bos_token_id=0,
                                   eos_token_id=0, **SHAPES[shape])
    torch.manual_seed(0)
    with torch.device(device):  # 8 B parameters are initialised on the GPU in seconds
        model = transformers.LlamaForCausalLM(cfg).to(getattr(torch, dtype))
    model.save_pretrained(folder)
    save_tokenizer(folder, chat=False)
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    return folder


def tmlu_counts(tiny: bool) -> list[int]:
    """TMLU's questions per subject (37 subjects, 2,981 questions), largest first."""
    with open(SHARED / "data" / "tmlu-subjects.tsv", encoding="utf-8") as f:
        counts = sorted((int(r["# Questions"]) for r in csv.DictReader(f, delimiter="\t")),
                        reverse=True)
    return [4, 4, 4] if tiny else counts


def write_workload(folder: Path, tiny: bool) -> list[str]:
    """A CMMLU folder of len(counts) subjects, the largest CMMLU subjects taking the largest
    TMLU counts; a subject with fewer questions than its count gives all it has and the rest
    go to the next subjects with rows to spare, so the total is TMLU's."""
    cmmlu = SHARED / "data" / "cmmlu"
    sizes = {p.stem: len(_rows(p)) for p in sorted((cmmlu / "test").glob("*.csv"))}
    counts = tmlu_counts(tiny)
    subjects = sorted(sizes, key=lambda s: (-sizes[s], s))[:len(counts)]
    take = [min(c, sizes[s]) for c, s in zip(counts, subjects)]
    short = sum(counts) - sum(take)
    for i, s in enumerate(subjects):
        extra = min(short, sizes[s] - take[i])
        take[i], short = take[i] + extra, short - extra
    (folder / "test").mkdir(parents=True, exist_ok=True)
    (folder / "dev").mkdir(exist_ok=True)
    shutil.copy(cmmlu / "subjects.json", folder / "subjects.json")
    for s, n in zip(subjects, take):
        shutil.copy(cmmlu / "dev" / f"{s}.csv", folder / "dev" / f"{s}.csv")
        rows = _rows(cmmlu / "test" / f"{s}.csv")[:n]
        with open(folder / "test" / f"{s}.csv", "w", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return subjects


def _rows(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return list(csv.DictReader(f))


# ------------------------------------------------------------------ engines
def commands(args, model: Path, data: Path, subjects: list[str], tasks: list[str],
             vllm: bool) -> dict[str, list[str]]:
    if args.engine_mode:
        return engine_commands(args, model, data, subjects, vllm)
    py, work = sys.executable, Path(args.work)
    ours = [py, "-m", "localeval.cli", "run", "--task", "cmmlu", "--data", str(data),
            "--subjects", ",".join(subjects), "--shots", "5", "--method", "likelihood",
            "--prompt-style", "lm-eval", "--dtype", args.dtype, "--no-cache", "--quiet"]
    theirs = [py, "-m", "lm_eval", "--tasks", ",".join(tasks), "--include_path",
              str(work / "lm_eval_tasks"), "--num_fewshot", "5", "--log_samples"]
    out = {
        "localeval hf": [*ours, "--model", f"hf:{model}", "--device", args.device,
                         "--output", str(work / "localeval-hf")],
        "lm-eval hf": [*theirs, "--model", "hf", "--model_args",
                       f"pretrained={model},dtype={args.dtype}", "--device", args.device,
                       "--batch_size", args.batch_size, "--output_path", str(work / "lm-eval-hf")],
    }
    if vllm:
        out["localeval vllm"] = [*ours, "--model", f"vllm:{model}",
                                 "--output", str(work / "localeval-vllm")]
        out["lm-eval vllm"] = [*theirs, "--model", "vllm", "--model_args",
                               f"pretrained={model},dtype={args.dtype}", "--batch_size", "auto",
                               "--output_path", str(work / "lm-eval-vllm")]
    return out


def engine_commands(args, model: Path, data: Path, subjects: list[str],
                    vllm: bool) -> dict[str, list[str]]:
    """Engine mode: lm-eval's rows run its model classes on the requests of localeval's first
    hf: run (bench/lm_eval_engine.py), its task pipeline not being installed."""
    py, work = sys.executable, Path(args.work)
    ours = commands(argparse.Namespace(**{**vars(args), "engine_mode": False}), model, data,
                    subjects, [], vllm)
    theirs = [py, str(HERE / "lm_eval_engine.py"), "--model", str(model), "--requests",
              str(work / "requests.jsonl")]
    out = {"localeval hf": ours["localeval hf"],
           "lm-eval hf": [*theirs, "--engine", "hf", "--device", args.device, "--model-args",
                          f"dtype={args.dtype}", "--batch-size", args.batch_size, "--out",
                          str(work / "lm-eval-hf" / "scores.jsonl")]}
    if vllm:
        out["localeval vllm"] = ours["localeval vllm"]
        out["lm-eval vllm"] = [*theirs, "--engine", "vllm", "--model-args",
                               f"dtype={args.dtype}", "--batch-size", "auto", "--out",
                               str(work / "lm-eval-vllm" / "scores.jsonl")]
    return out


def run_timed(name: str, cmd: list[str], env: dict, log: Path) -> float:
    start = time.perf_counter()
    with open(log, "w") as f:
        done = subprocess.run(cmd, env=env, stdout=f, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{name} failed (exit {done.returncode}); its output: {log}\n"
                         + log.read_text(errors="replace")[-3000:])
    return wall


def letters(work: Path, name: str, data: Path) -> dict[str, str]:
    """Predicted letter per question ("subject/row index"), from either harness's output."""
    folder = work / name.replace(" ", "-")
    if name.startswith("localeval"):
        lines = (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines()
        return {s["id"]: s["pred"] for s in map(json.loads, lines)}
    if (folder / "scores.jsonl").exists():  # engine mode (bench/lm_eval_engine.py)
        rows = map(json.loads, (folder / "scores.jsonl").read_text().splitlines())
        return {s["id"]: "ABCD"[s["logprobs"].index(max(s["logprobs"]))] for s in rows}
    out = {}
    for f in folder.rglob("samples_*.jsonl"):
        subject = re.search(r"samples_local_cmmlu_(.+?)_\d{4}-", f.name).group(1)
        for line in f.read_text(encoding="utf-8").splitlines():
            s = json.loads(line)
            scores = [float(r[0][0]) for r in s["resps"]]  # log-likelihoods, as strings
            index = s["doc"].get("Unnamed: 0", s["doc"].get(""))  # the CSV's unnamed column
            out[f"{subject}/{index}"] = "ABCD"[scores.index(max(scores))]
    return out


def table(walls: dict[str, float], picks: dict[str, dict], tokens: int, skipped: list[str]):
    base = walls["lm-eval hf"]
    ref = picks["lm-eval hf"]
    print(f"\n{'engine':16s} {'wall s':>8s} {'tokens/s':>10s} {'× lm-eval hf':>13s} "
          f"{'letters = lm-eval hf':>21s}")
    for name, wall in walls.items():
        same = sum(picks[name].get(k) == v for k, v in ref.items())
        print(f"{name:16s} {wall:8.1f} {tokens / wall:10.0f} {base / wall:13.2f} "
              f"{same:>12d}/{len(ref)}")
    for name in skipped:
        print(f"{name:16s} skipped (vLLM does not import)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="tiny shape, 12 questions, CPU")
    ap.add_argument("--wheels", type=Path, help="install lm-eval from this folder if absent")
    ap.add_argument("--work", default=str(HERE / "out" / "gpu"))
    ap.add_argument("--batch-size", default=None, help="lm-eval's (default auto; --tiny 8)")
    ap.add_argument("--repeats", type=int, default=1, help="each engine's runs (median shown)")
    ap.add_argument("--no-vllm", action="store_true", help="skip the vLLM engines")
    ap.add_argument("--make-wheels", type=Path, metavar="DIR")
    ap.add_argument("--have", type=Path, help="with --make-wheels: the target's pip freeze")
    ap.add_argument("--lean", action="store_true", help="with --make-wheels: lm-eval without "
                    "its task pipeline (under 64 MiB; its rows then run in engine mode)")
    ap.add_argument("--lm-eval-engine", action="store_true",
                    help="lm-eval's rows run its model classes on localeval's requests even "
                    "where its CLI could run (engine mode; default: only without datasets)")
    args = ap.parse_args()
    if args.make_wheels:
        return make_wheels(args.make_wheels, args.have, args.lean)
    args.device = "cpu" if args.tiny else "cuda"
    args.dtype = "float32" if args.tiny else "bfloat16"
    args.batch_size = args.batch_size or ("8" if args.tiny else "auto")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    print(f"lm-eval: {ensure_lm_eval(args.wheels)}", flush=True)
    args.engine_mode = args.lm_eval_engine or not importable("datasets")
    if args.engine_mode:
        print("lm-eval engine mode: its model classes on the same requests (its task pipeline "
              "is not run: bench/lm_eval_engine.py)", flush=True)
    vllm = not args.no_vllm and not args.tiny and importable("vllm")
    shape = "tiny" if args.tiny else "llama3-8b"
    model = build_model(work / f"model-{shape}", shape, args.dtype, args.device)
    data = work / "data"
    subjects = write_workload(data, args.tiny)
    tasks = write_task_configs(work / "lm_eval_tasks", data, subjects)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "src"),
                                                       os.environ.get("PYTHONPATH")]))}
    cmds = commands(args, model, data, subjects, tasks, vllm)
    for name in cmds:  # an earlier invocation's answers there would be read with this one's
        if name.startswith("lm-eval"):
            shutil.rmtree(work / name.replace(" ", "-"), ignore_errors=True)
    runs: dict[str, list[float]] = {name: [] for name in cmds}
    for rep in range(args.repeats):  # engines in turn, each repetition
        for name, cmd in cmds.items():
            runs[name].append(run_timed(name, cmd, env, work / f"{name.replace(' ', '-')}.log"))
            if name == "localeval hf" and args.engine_mode and rep == 0:
                requests_from_samples(work / "localeval-hf" / "samples.jsonl",
                                      work / "requests.jsonl")
            print(f"rep {rep + 1} {name:16s} {runs[name][-1]:8.1f} s", flush=True)
    walls = {name: sorted(w)[len(w) // 2] for name, w in runs.items()}
    picks = {name: letters(work, name, data) for name in cmds}
    timing = json.loads((work / "localeval-hf" / "results.json").read_text())["timing"]
    print(f"\n{shape}, {args.dtype}, {args.device}; {len(picks['localeval hf'])} questions in "
          f"{len(subjects)} subjects; workload {timing['prompt_tokens']} prompt tokens, "
          f"localeval hf forwarded {timing['forwarded_tokens']}; median of {args.repeats}"
          + ("; lm-eval rows: its model classes on the same requests (engine mode)"
             if args.engine_mode else ""))
    table(walls, picks, timing["prompt_tokens"],
          [] if vllm else ["localeval vllm", "lm-eval vllm"])


if __name__ == "__main__":
    main()
