"""Real runs made cheaply, offline, without a model: a guard model whose label log-probs come
from a hash of each request, and a multiple-choice model that always answers one letter. The
runs go through ``evaluate`` end to end (results.json, samples, the results store)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from localeval import evaluate
from localeval.backends.base import Backend, Generate, Generated, NextLogprobs
from localeval.demo.safety import SAMPLE_SAFETY


class HashedGuard(Backend):
    """Every score different and fixed, so PR-AUCs are real numbers between 0 and 1."""

    def __init__(self, model: str = "hashed-guard"):
        self.identity = {"backend": "hashed", "model": model}

    def max_context(self):
        return None

    def count_tokens(self, prompt):
        return 0

    def run(self, requests, progress=None):
        out = []
        for r in requests:
            digest = hashlib.sha256(json.dumps(r.prompt, ensure_ascii=False).encode()).digest()
            h = int.from_bytes(digest[:4], "big") / 2**32
            values = {r.candidates[0]: -3 * h, r.candidates[1]: -1.5}
            # its vocabulary holds nothing above the two labels: they rank 1 and 2
            ranks = None if r.top is None else {
                c: 1 + sum(w > v for w in values.values()) for c, v in values.items()}
            out.append(NextLogprobs(logprobs=values, ranks=ranks))
        return out


class AlwaysLetter(Backend):
    """Answers ``letter`` to every multiple-choice question."""

    def __init__(self, letter: str):
        self.letter = letter
        self.identity = {"backend": "always", "model": f"always-{letter}"}

    def max_context(self):
        return None

    def count_tokens(self, prompt):
        return 0

    def run(self, requests, progress=None):
        return [NextLogprobs(logprobs={c: 0.0 if c.strip() == self.letter else -9.0
                                       for c in r.candidates}) for r in requests]


def safeguard_run(folder: Path, task: str = "sea-safeguard", **options):
    """The zero-shot guard (or ``guard``) on the bundled SEA-SafeguardBench-style sample (its
    three subsets, English and seven local languages), or on ``data``; ``model``: another
    backend."""
    data = options.pop("data", Path(str(SAMPLE_SAFETY)))
    model = options.pop("model", None) or HashedGuard(options.pop("model_name", "hashed-guard"))
    guard = options.pop("guard", "zero-shot")
    return evaluate(task=task, model=model, guard=guard, data=data,
                    output=folder, quiet=True, n_resamples=20, **options)


# Subjects named in scripts pdflatex has no font for, accented Latin and LaTeX's specials;
# the model (always "A") gets 0 of 3 in one subject and 5 of 5 in another.
MCQ_SUBJECTS = {"國文": "BBB", "ภาษาไทย": "AAAAA", "Tiếng Việt": "AB", "law_&_order #1": "BA"}


def mcq_run(folder: Path):
    rows = [{"id": f"{i}", "subject": subject, "question": f"Q{i} of {subject}?", "A": "a",
             "B": "b", "C": "c", "D": "d", "answer": answer}
            for subject, answers in MCQ_SUBJECTS.items() for i, answer in enumerate(answers)]
    folder.parent.mkdir(parents=True, exist_ok=True)
    data = folder.parent / "exam.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return evaluate(task="my-exam", model=AlwaysLetter("A"), data=data, shots=0,
                    output=folder, quiet=True)


def stand_in_model() -> str:
    """An ``hf:`` spec whose folder passes every check before a model loads (a config.json, a
    weights file), for tests that replace the model itself: it is never loaded."""
    import tempfile

    folder = Path(tempfile.gettempdir()) / "localeval-stand-in-model"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").touch()
    return f"hf:{folder}"


def one_line(capsys, *needles) -> str:
    """The stderr a command left: one line, no traceback, holding every one of ``needles``."""
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, err
    return err.strip()


def run_line(argv: list[str], capsys, *needles) -> str:
    """The one line a command that fails (exit 2) leaves on stderr, holding ``needles``."""
    from localeval.cli import main

    assert main(argv) == 2
    return one_line(capsys, *needles)


def json_set(old: str, path: tuple, value) -> str:
    """The JSON text ``old`` with the key at ``path`` (``"metrics", "micro", "acc"``) set to
    ``value``: a hand edit of a run folder's file, for the damaged-folder tests."""
    data = json.loads(old)
    *above, key = path
    inner = data
    for step in above:
        inner = inner[step]
    inner[key] = value
    return json.dumps(data)


def as_before_data_files(store, model: str) -> None:
    """Make ``model``'s recorded runs in the SQLite ``store`` look as a run recorded before
    config.json kept its data's sha256 (``data_files``) and before the run summary: the next
    command that writes the store summarises them again."""
    import sqlite3

    with sqlite3.connect(store) as db:
        (config,) = db.execute("SELECT config FROM runs WHERE model = ?", (model,)).fetchone()
        old = json.loads(config)
        del old["data_files"]
        db.execute("UPDATE runs SET config = ?, data_files = NULL WHERE model = ?",
                   (json.dumps(old), model))
        db.execute("DELETE FROM run_summary WHERE run_id IN (SELECT run_id FROM runs WHERE "
                   "model = ?)", (model,))


def as_before_average(store, model: str) -> None:
    """Make ``model``'s recorded multiple-choice runs in the SQLite ``store`` look as runs
    recorded before issue 51 item 4: the paper's Average stored as ``accuracy`` (the pooled
    ``micro`` when the run had no discipline columns), their summaries of revision 1."""
    import sqlite3

    with sqlite3.connect(store) as db:
        for (run_id,) in db.execute("SELECT run_id FROM runs WHERE model = ? AND "
                                    "results_schema = 'localeval.mcq/1'", (model,)).fetchall():
            names = {name: (value, n) for name, value, n in db.execute(
                "SELECT name, value, n FROM metrics WHERE run_id = ?", (run_id,))}
            if "average" in names:
                db.execute("UPDATE metrics SET name = 'accuracy' WHERE run_id = ? AND "
                           "name = 'average'", (run_id,))
                names["accuracy"] = names.pop("average")
            else:
                db.execute("INSERT INTO metrics VALUES (?, 'accuracy', ?, ?)",
                           (run_id, *names["micro"]))
                names["accuracy"] = names["micro"]
            db.execute("UPDATE run_summary SET revision = 1, metric_names = ? WHERE run_id = ?",
                       (json.dumps(sorted(names)), run_id))


SEPARATORS = "\u2028\u2029\u0085"  # what str.splitlines() splits on, besides \n and \r


class Writes:
    """Generates the answer letter wrapped in every Unicode line separator."""

    identity = {"backend": "writes", "model": "writes"}

    def run(self, requests, progress=None):
        return [Generated(text=f"A{SEPARATORS}B\u2028") for r in requests
                if isinstance(r, Generate)]
