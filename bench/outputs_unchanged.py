"""Outputs unchanged by a refactor: run the same commands on two checkouts and diff every file and
printed output, with paths, timestamps, timing and the command line left out.

    python bench/outputs_unchanged.py record OUT          # run everything with this checkout
    python bench/outputs_unchanged.py record OUT --server # the same model behind an OpenAI server
    python bench/outputs_unchanged.py diff OUT_A OUT_B    # list what differs

``record`` runs, with a seeded random 2-layer Llama around the shared SmolLM2 tokenizer: the demo;
a CMMLU likelihood run, a generation run and a run with permuted options; a safety-prompts run
(XSTest); a sea-safeguard run on the bundled sample with and without --cultural-awareness, and
with other metric options; an llm-safety run; a contamination run; a rescore of the generation
and of the sea-safeguard run. Then ``show``, ``export`` (md, latex, csv), ``compare`` and ``leaderboard`` of each. It writes
``OUT/outputs.json``: every file of every run folder and every printed output, normalised. The
checkout is the one whose ``localeval`` the Python running this script imports (run it once with
each checkout's venv or PYTHONPATH); paths under it and under this script's checkout are written
``<CHECKOUT>``, and progress lines on the way are left out (their number follows the load). Give
the two OUT folders, and the two checkouts, paths of the same length, so a table's width does not
differ by a path in a column. Takes 5-10 minutes on 2 cores.

``--server`` runs the ``openai:`` backend instead, against the tests' loopback server
(tests/openai_server.py: the same random model in transformers, vLLM's endpoints), for the runs
that go through a server: CMMLU by likelihood in each ``--scoring`` mode, by generation, with a
chat prompt, a sea-safeguard run and a contamination run (echo). A minute or two.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
# the checkout whose localeval runs (PYTHONPATH may name another than this script's): the
# demo's data and the sample's path lie under one or the other, named alike in outputs.json
_spec = importlib.util.find_spec("localeval")
CHECKOUTS = sorted({str(REPO), *([str(Path(_spec.origin).resolve().parents[2])]
                                  if _spec and _spec.origin else [])}, key=len, reverse=True)
from tiny_models import SHARED, make_model  # noqa: E402

SAMPLE = "src/localeval/data/sample/safety/items.jsonl"
# results.json / config.json keys that change from run to run, or name where things are
VOLATILE = {"timing", "history", "command", "started_at", "finished_at", "packages", "python",
            "localeval_version", "fingerprint"}  # fingerprint: the model files' mtimes


def runs(model: str, out: Path) -> dict[str, list[str]]:
    """The run commands, by run name."""
    cmmlu = ["--task", "cmmlu", "--data", str(SHARED / "data" / "cmmlu"), "--subjects",
             "arts,virology", "--limit", "12", "--model", model]
    # label_scores=full and verdict_position=fixed: a random model ranks no label in its top 20,
    # at the first position or in the 100 it would generate, so every verdict would fail
    full = ["--guard-option", "label_scores=full", "--guard-option", "verdict_position=fixed"]
    safety = ["--task", "sea-safeguard", "--guard", "zero-shot", "--data", str(REPO / SAMPLE),
              "--model", model, "--bootstrap", "20", *full]
    texts = out / "texts.jsonl"
    texts.write_text("".join(json.dumps({"id": str(i), "text": t}, ensure_ascii=False) + "\n"
                             for i, t in enumerate(["臺灣的首都是臺北。", "The cat sat on the mat.",
                                                    "ภาษาไทยเป็นภาษาราชการ", "一加一等於二。"])),
                     encoding="utf-8")
    return {
        "cmmlu-likelihood": ["run", *cmmlu, "--shots", "5", "--method", "likelihood"],
        "cmmlu-generation": ["run", *cmmlu, "--shots", "2", "--method", "generation",
                             "--max-tokens", "4"],
        "cmmlu-permuted": ["run", *cmmlu, "--shots", "1", "--permute-options", "2"],
        "safety-prompts": ["run", "--task", "safety-prompts", "--guard", "zero-shot", "--data",
                           str(SHARED / "data" / "xstest" / "xstest_prompts.csv"), "--limit", "40",
                           "--model", model, "--bootstrap", "20", *full],
        "sea-safeguard": ["run", *safety],
        "sea-safeguard-ge": ["run", *safety, "--threshold-rule", "ge", "--auprc", "ap"],
        "sea-safeguard-aware": ["run", *safety, "--cultural-awareness"],
        "llm-safety": ["run", "--task", "llm-safety", "--model", model, "--data",
                       str(SHARED / "data" / "jbb-multilingual" / "prompts.jsonl"), "--limit", "2",
                       "--judge", "llamaguard3", "--judge-model", model, "--max-tokens", "6",
                       "--judge-option", "label_scores=full",
                       "--judge-option", "verdict_position=fixed",
                       "--bootstrap", "20", "--greedy", "--refusal", "detector"],
        "contamination": ["contamination", "--model", model, "--data", str(texts), "--k",
                          "10,50"],
    }


# a run scored again from its cache with an option that acts on answers only
RESCORES = {"cmmlu-generation": ["--extract", "tmlu"],
            "sea-safeguard": ["--threshold-rule", "ge", "--sensitive", "paper"]}
COMPARES = [("cmmlu-likelihood", "cmmlu-generation"), ("sea-safeguard", "sea-safeguard-aware"),
            ("sea-safeguard", "safety-prompts")]
LEADERBOARDS = ["cmmlu", "safety-prompts", "sea-safeguard", "llm-safety", "contamination"]


def server_runs(model: str, out: Path) -> dict[str, list[str]]:
    """The run commands through ``openai:tiny`` at ``model`` (the server's base URL)."""
    hf = runs("openai:tiny", out)
    url = ["--base-url", model]
    vocabulary = ["--top-logprobs", "49152"]  # the whole of it: a random model's top 20 misses
    likelihood = [*hf["cmmlu-likelihood"], *url]
    return {
        **{f"cmmlu-{mode}": [*likelihood, "--scoring", mode] for mode in ("auto", "top-k",
                                                                          "echo", "ids")},
        "cmmlu-top-k-all": [*likelihood, "--scoring", "top-k", *vocabulary],
        "cmmlu-generation": [*hf["cmmlu-generation"], *url],
        "cmmlu-chat": [*likelihood, "--chat", "single", "--scoring", "top-k", *vocabulary],
        "sea-safeguard": [*hf["sea-safeguard"], *url, *vocabulary],
        "contamination": [*hf["contamination"], *url],
    }


def localeval(args: list[str], env: dict) -> dict:
    done = subprocess.run([sys.executable, "-m", "localeval.cli", *args], capture_output=True,
                          text=True, env=env, timeout=1800)
    return {"rc": done.returncode, "stdout": done.stdout, "stderr": done.stderr}


def record(out: Path, server: bool = False) -> None:
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    folder = make_model(out / "model", layers=2, chat=True)
    env = {**os.environ, "LOCALEVAL_STORE": str(out / "store.sqlite"), "COLUMNS": "200",
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    printed: dict[str, dict] = {}
    if server:
        from openai_server import ModelServer

        served = ModelServer(folder)
        try:
            for name, args in server_runs(served.url, out).items():
                printed[f"run {name}"] = localeval([*args, "--output", str(out / name)], env)
        finally:
            served.stop()
    else:
        printed["demo"] = localeval(["demo", "--output", str(out / "demo")], env)
        for name, args in runs(f"hf:{folder}", out).items():
            printed[f"run {name}"] = localeval([*args, "--output", str(out / name)], env)
    _shown(out, env, printed, server)


def _shown(out: Path, env: dict, printed: dict[str, dict], server: bool) -> None:
    """Rescore, show, export, compare and leaderboard the runs in ``out``, and write
    ``out/outputs.json``."""
    for name, args in ({} if server else RESCORES).items():
        printed[f"rescore {name}"] = localeval(["rescore", str(out / name), *args, "--output",
                                                str(out / f"{name}-rescored")], env)
    folders = [p.parent for p in sorted(out.rglob("results.json"))]
    for folder in folders:
        rel = folder.relative_to(out)
        printed[f"show {rel}"] = localeval(["show", str(folder)], env)
        for fmt in ("md", "latex", "csv"):
            # CSV on standard output is one table (export refuses several): the first
            one = ["--table", "1"] if fmt == "csv" else []
            printed[f"export {fmt} {rel}"] = localeval(["export", str(folder), "--format", fmt,
                                                        *one], env)
            localeval(["export", str(folder), "--format", fmt, "--output",
                       str(out / "exports" / str(rel).replace("/", "_") / fmt)], env)
    for a, b in [] if server else COMPARES:
        printed[f"compare {a} {b}"] = localeval(["compare", str(out / a), str(out / b)], env)
    for task in LEADERBOARDS:
        printed[f"leaderboard {task}"] = localeval(["leaderboard", "--task", task], env)
        printed[f"leaderboard {task} --json"] = localeval(["leaderboard", "--task", task,
                                                            "--json"], env)
    files = {str(p.relative_to(out)): p.read_text(encoding="utf-8", errors="replace")
             for p in sorted(out.rglob("*")) if p.is_file() and _kept(p.relative_to(out))}
    # the server's port differs from run to run
    files = {k: re.sub(r"http://127\.0\.0\.1:\d+", "<SERVER>", v) for k, v in files.items()}
    printed = {k: {f: re.sub(r"http://127\.0\.0\.1:\d+", "<SERVER>", v)
                   if isinstance(v, str) else v for f, v in p.items()}
               for k, p in printed.items()}
    data = {"files": {k: normalise(v, k, out) for k, v in files.items()},
            "printed": {k: {f: normalise(str(v), f, out) for f, v in p.items()}
                        for k, p in printed.items()}}
    (out / "outputs.json").write_text(json.dumps(data, ensure_ascii=False, indent=1,
                                                 sort_keys=True), encoding="utf-8")
    failed = [k for k, p in printed.items() if p["rc"] != 0]
    print(f"recorded {len(files)} files and {len(printed)} outputs in {out}/outputs.json; "
          f"non-zero exits: {failed or 'none'}")


def _kept(rel: Path) -> bool:
    skip = ("model", "cache.sqlite", "store.sqlite", "outputs.json", ".lock")
    return not any(part.startswith(skip) for part in rel.parts) and rel.suffix != ".png"


def normalise(text: str, name: str, out: Path) -> str:
    if name.endswith(".json") and not name.endswith("outputs.json"):
        try:
            data = _drop_volatile(json.loads(text))
            dumped = json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True)
            return _checkout_free(dumped.replace(str(out), "<OUT>"))
        except ValueError:
            pass
    text = _checkout_free(text.replace(str(out), "<OUT>"))
    text = re.sub(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\+00:00)?", "<TIME>", text)
    text = re.sub(r'"run_id": "[0-9a-f]+"', '"run_id": "<ID>"', text)
    text = re.sub(r"<dt>(timing|history|command|packages|python|localeval)</dt><dd>.*?</dd>",
                  r"<dt>\1</dt><dd>…</dd>", text, flags=re.S)
    text = re.sub(r"<dt>fingerprint</dt><dd>[0-9a-f]+</dd>", "<dt>fingerprint</dt><dd>…</dd>", text)
    text = re.sub(r"\b\d:\d\d:\d\d\b", "<ELAPSED>", text)
    return timing_free(re.sub(r"[\d.]+ s\b|\d+(\.\d+)? (questions|items|texts|samples)/s",
                              "<SECONDS>", text))


def _checkout_free(text: str) -> str:
    for checkout in CHECKOUTS:
        text = text.replace(checkout, "<CHECKOUT>")
    return text


def timing_free(text: str) -> str:
    """What the rules above miss: progress bars' requests/s, the report's timing facts (nested
    in its provenance list) and a model's fingerprint inside the report's JSON of a role's
    backend. Applied again by ``diff``, so folders recorded before it compare the same way."""
    text = re.sub(r"\d+(\.\d+)? (requests|questions|texts|samples)/s", "<RATE>", text)
    # a progress line where stderr is no terminal: its time left
    text = re.sub(r"about \d+:\d\d:\d\d left", "about <LEFT> left", text)
    # a progress line on the way (how many a run prints depends on the machine's load); its
    # last, "N/N done (100%)", stays. In outputs.json a printed newline is written "\\n".
    text = re.sub(r"[a-z]+: \d+/\d+ done \(\d+%\), [^\n\\]*about <(LEFT|ELAPSED)> left"
                  r"(\n|\\n)", "", text)
    text = re.sub(r"&quot;fingerprint&quot;: &quot;[0-9a-f]+&quot;", "&quot;fingerprint&quot;: …",
                  text)
    return re.sub(r"<dt>(seconds|[a-z ]+ per second)</dt><dd>[\d.]+</dd>", r"<dt>\1</dt><dd>…</dd>",
                  text)


def _drop_volatile(value):
    if isinstance(value, dict):
        return {k: _drop_volatile(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_drop_volatile(v) for v in value]
    return value


def diff(a: Path, b: Path) -> int:
    import difflib

    old = json.loads((a / "outputs.json").read_text(encoding="utf-8"))
    new = json.loads((b / "outputs.json").read_text(encoding="utf-8"))
    differences = 0
    for section in ("files", "printed"):
        for key in sorted(set(old[section]) | set(new[section])):
            x, y = old[section].get(key), new[section].get(key)
            x, y = (json.loads(timing_free(json.dumps(v))) if v is not None else v
                    for v in (x, y))
            if x == y:
                continue
            differences += 1
            if x is None or y is None:
                print(f"== {section} {key}: only in {'B' if x is None else 'A'}")
                continue
            x = x if isinstance(x, str) else json.dumps(x, indent=1, ensure_ascii=False)
            y = y if isinstance(y, str) else json.dumps(y, indent=1, ensure_ascii=False)
            lines = list(difflib.unified_diff(x.splitlines(), y.splitlines(), "A", "B",
                                              lineterm="", n=1))
            print(f"== {section} {key}: {len(lines)} diff lines")
            print("\n".join(line[:300] for line in lines[:60]))
    print(f"{differences} outputs differ")
    return 1 if differences else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("record")
    r.add_argument("out", type=Path)
    r.add_argument("--server", action="store_true", help="the openai: backend against the "
                   "tests' loopback server")
    d = sub.add_parser("diff")
    d.add_argument("a", type=Path)
    d.add_argument("b", type=Path)
    args = parser.parse_args()
    if args.command == "record":
        record(args.out, args.server)
        return 0
    return diff(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
