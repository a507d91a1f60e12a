"""The run folder: ``config.json`` (how to rerun), ``results.json`` (numbers), ``samples.jsonl``.

Files are written whole to a temporary name and renamed, so a crash never leaves half a file.
JSON keys are sorted and floats written as Python prints them, so the same run gives the same bytes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_json(path: Path, data) -> None:
    _atomic_write(path, json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n")


def write_samples(path: Path, samples: list[dict]) -> None:
    _atomic_write(path, "".join(json.dumps(s, ensure_ascii=False, sort_keys=True) + "\n"
                                for s in samples))


def save_run(folder: str | Path, config: dict, results: dict, samples: list[dict]) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / "config.json", config)
    write_samples(folder / "samples.jsonl", samples)
    write_json(folder / "results.json", results)
    return folder


def load_run(folder: str | Path) -> tuple[dict, dict, list[dict]]:
    folder = Path(folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    samples = [json.loads(line) for line in
               (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines() if line]
    return config, results, samples
