"""Real runs for the viewer's tests, made offline through ``evaluate`` (no model): a
multiple-choice run whose subjects, questions, model name, folder name and request errors are
hostile markup, a safeguard run on the bundled sample, and the same multiple-choice data
answered by another model (to compare); both recorded in one results store, plus a run made
without the store, found only by scanning its folder."""

from __future__ import annotations

import json
from pathlib import Path

from offline_runs import AlwaysLetter, safeguard_run

from localeval import evaluate
from localeval.backends.base import Failed
from localeval.backends.failures import Unclassified

SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(2)>'
HOSTILE_SUBJECTS = {f"law {SCRIPT}": "AB", f"art {IMG}": "BA", "physics": "AAB"}


class Answers(AlwaysLetter):
    """Answers ``letter``; a question asking to fail is a request error (a server's message
    that is itself markup), as a real server's 500 is."""

    def __init__(self, letter: str, name: str):
        super().__init__(letter)
        self.identity = {"backend": "always", "model": name}

    def run(self, requests, progress=None):
        answered = super().run(requests, progress)
        return [Failed(Unclassified(f"HTTP 500: {SCRIPT}")) if "please fail" in str(r.prompt)
                else a for r, a in zip(requests, answered)]


def exam(folder: Path) -> Path:
    rows = [{"id": f"{s}-{i}", "subject": subject,
             "question": f"Q{i} {SCRIPT} {IMG}" + (" please fail" if s == 2 and i == 2 else ""),
             "A": "a", "B": "b", "C": "c", "D": "d", "answer": answer}
            for s, (subject, answers) in enumerate(HOSTILE_SUBJECTS.items())
            for i, answer in enumerate(answers)]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "exam.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def make_runs(root: Path) -> dict[str, Path]:
    store = root / "store.sqlite"
    data = exam(root)
    runs = {"mcq": root / "recorded" / f"mcq {IMG}", "mcq_b": root / "recorded" / "mcq-b",
            "safety": root / "recorded" / "safety", "loose": root / "loose" / "mcq-c"}
    evaluate(task="my-exam", model=Answers("A", f"org/model {SCRIPT}"), data=data, shots=0,
             output=runs["mcq"], quiet=True, store=store)
    evaluate(task="my-exam", model=Answers("B", "org/other"), data=data, shots=0,
             output=runs["mcq_b"], quiet=True, store=store)
    safeguard_run(runs["safety"], store=store)
    evaluate(task="my-exam", model=Answers("C", "org/unrecorded"), data=data, shots=0,
             output=runs["loose"], quiet=True, store=False)
    return {**runs, "store": store}
