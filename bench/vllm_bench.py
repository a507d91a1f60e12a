"""What ``bench/engines.py`` and ``bench/scoring_modes.py`` share: their flags, the seeded model
(SmolLM2-135M's shape at reduced depth, float32 in the runs), the 5-shot CMMLU likelihood run's
flags, vLLM's OpenAI server started once with every log-prob of the vocabulary on offer (its
start-up timed apart), and the agreement of a run's log-probs with ``hf:``'s."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from tiny_models import SHARED, make_model  # noqa: E402
from vllm_server import VllmServer, vllm_env  # noqa: E402


def parser(work: str) -> argparse.ArgumentParser:
    """The flags both take; ``work``: the folder under ``bench/out`` by default."""
    p = argparse.ArgumentParser()
    p.add_argument("--subjects", default="arts,virology")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--limit", help="questions per subject (default: all)")
    p.add_argument("--work", default=str(HERE / "out" / work))
    return p


def bench_model(args: argparse.Namespace) -> Path:
    return make_model(Path(args.work) / f"smollm2-135m-{args.layers}l", arch="smollm2-135m",
                      layers=args.layers, chat=False)


def cmmlu_run(args: argparse.Namespace) -> list[str]:
    """``localeval run``'s flags for the 5-shot likelihood run, nothing kept but the folder."""
    return ["run", "--task", "cmmlu", "--data", str(SHARED / "data" / "cmmlu"), "--subjects",
            args.subjects, "--shots", "5", "--method", "likelihood",
            "--no-cache", "--no-store", "--no-report", "--quiet", "--overwrite",
            *(["--limit", args.limit] if args.limit else [])]


def bench_env() -> dict[str, str]:
    return {**vllm_env(), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def start_server(model: Path, work: Path) -> tuple[VllmServer, float]:
    """vLLM's server on ``model`` offering the whole vocabulary's log-probs (a random model's
    letters are anywhere in it), and its start-up in seconds."""
    started = time.perf_counter()
    server = VllmServer(model, work / "vllm-server.log", "--max-logprobs", "49152")
    return server, time.perf_counter() - started


def samples(folder: Path) -> dict[str, dict]:
    lines = (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    return {s["id"]: s for s in map(json.loads, lines)}


def agreement(ours: dict[str, dict], hf: dict[str, dict]) -> str:
    worst = max(abs(ours[i]["logprobs"][k] - v) for i, s in hf.items()
                for k, v in s["logprobs"].items())
    same = sum(ours[i]["pred"] == s["pred"] for i, s in hf.items())
    return f"letters equal {same}/{len(hf)}, max |Δ log-prob| {worst:.1e}"
