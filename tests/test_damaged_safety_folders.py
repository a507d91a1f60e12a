"""A hand-edited safeguard, LLM safety or contamination folder is refused in one line naming the
file and the field (issue 48 item 4), as a multiple-choice one is (test_damaged_folders.py):
numbers out of their range (a PR-AUC of 1.5, an n_failed of -3, a Table 2 cell of 150 points),
and results that the samples contradict: the counts recounted and the headline recomputed from
samples.jsonl (the overall PR-AUC per kind and context under the folder's recorded estimator; an
LLM safety run's rates; a contamination run's summaries per source, score and k), without the
bootstrap. Before, `show` and `compare` printed the edits as
facts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from offline_runs import json_set, safeguard_run

from localeval.cli import main
from localeval.store.runs import load_run

LLM_SAFETY = Path(__file__).parent / "fixtures" / "runs-a9a91f9" / "llm-safety"
CONTAMINATION = Path(__file__).parent / "fixtures" / "runs-a9a91f9" / "contamination"


def _set(path, value):
    return lambda old: json_set(old, path, value)


def _score_of_a_harmful_prompt(old):
    """The first harmful prompt's score lowered to 0.0001: the prompt rows' PR-AUC changes."""
    lines = old.splitlines()
    for i, line in enumerate(lines):
        sample = json.loads(line)
        if sample["kind"] == "prompt" and sample["label"] == 1 and sample["score"] is not None:
            lines[i] = json.dumps({**sample, "score": 0.0001})
            break
    return "\n".join(lines) + "\n"


def _label_dropped(old):
    """A sample's label set to null (excluded), results.json left as it was."""
    lines = old.splitlines()
    lines[0] = json.dumps({**json.loads(lines[0]), "label": None})
    return "\n".join(lines) + "\n"


def _first_min_k(value):
    """The first text's Min-10% Prob set to ``value``, results.json left as it was."""
    def edit(old):
        lines = old.splitlines()
        sample = json.loads(lines[0])
        lines[0] = json.dumps({**sample, "min_k": {**sample["min_k"], "10": value}})
        return "\n".join(lines) + "\n"
    return edit


# (folder, file edited, edit, what the one line says); the line names results.json, whose
# numbers the samples contradict, whichever of the two files was edited (as for MCQ)
DAMAGE = {
    "auprc-over-1": ("safeguard", "results.json", _set(("overall", 0, "auprc"), 1.5),
                     "field overall.0.auprc: should be a share from 0 to 1 (it is 1.5)"),
    "n-failed-negative": ("safeguard", "results.json", _set(("n_failed",), -3),
                          "field n_failed: should be greater than or equal to 0"),
    "table2-cell-over-100": ("safeguard", "results.json",
                             _set(("table2", "rows", 0, "values", "prompt/avg"), 150.0),
                             "should be points from 0 to 100 (it is 150.0)"),
    "n-failed-recounted": ("safeguard", "results.json", _set(("n_failed",), 2),
                           "field n_failed: 2, but samples.jsonl has 0 failed"),
    "n-excluded-recounted": ("safeguard", "samples.jsonl", _label_dropped,
                             "field n_excluded: 0, but samples.jsonl has 1 left out by the "
                             "label policy"),
    "auprc-recomputed": ("safeguard", "results.json", _set(("overall", 0, "auprc"), 0.25),
                         "field overall.0.auprc: 0.25, but samples.jsonl gives"),
    "score-edited": ("safeguard", "samples.jsonl", _score_of_a_harmful_prompt,
                     "field overall.0.auprc: "),
    "llm-rate-over-1": ("llm-safety", "results.json",
                        _set(("overall", "harmful_response_rate", "rate"), 1.5),
                        "field overall.harmful_response_rate.rate: should be a share from 0 to "
                        "1 (it is 1.5)"),
    "llm-harmful-rate": ("llm-safety", "results.json",
                         _set(("overall", "harmful_response_rate", "rate"), 0.5),
                         "field overall.harmful_response_rate.rate: 0.5, but samples.jsonl "
                         "gives 0.0"),
    "llm-by-lang-refusal": ("llm-safety", "results.json",
                            _set(("by_lang", "en", "refusal_rate_safe", "n"), 3),
                            "field by_lang.en.refusal_rate_safe.n: 3, but samples.jsonl gives 1"),
    "llm-n-failed": ("llm-safety", "results.json", _set(("n_failed",), 4),
                     "field n_failed: 4, but samples.jsonl has 0 failed"),
    # a contamination run: its per-source summaries recomputed from the texts' scores
    "min-k-median": ("contamination", "results.json",
                     _set(("sources", "texts", "min_k", "10", "median"), -1.0),
                     "field sources.texts.min_k.10.median: -1.0, but samples.jsonl gives "
                     "-27.55"),
    "min-k-of-a-text": ("contamination", "samples.jsonl", _first_min_k(-1.0),
                        "field sources.texts.min_k.10."),
    "source-count": ("contamination", "results.json", _set(("sources", "texts", "n"), 9),
                     "field sources.texts.n: 9, but samples.jsonl gives 4"),
    "min-k-n-negative": ("contamination", "results.json",
                         _set(("sources", "texts", "min_k", "10", "n"), -4),
                         "field sources.texts.min_k.10.n: should be greater than or equal to 0"),
}


@pytest.fixture(scope="module")
def safeguard(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs") / "safeguard"
    safeguard_run(folder, auprc="trapezoid")
    return folder


@pytest.fixture
def finished(safeguard):
    return {"safeguard": safeguard, "llm-safety": LLM_SAFETY, "contamination": CONTAMINATION}


@pytest.fixture(params=sorted(DAMAGE))
def damaged(request, finished, tmp_path):
    kind, name, edit, said = DAMAGE[request.param]
    folder = tmp_path / "damaged"
    shutil.copytree(finished[kind], folder)
    path = folder / name
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    return finished[kind], folder, "results.json", said


def test_the_unedited_folders_load(finished):
    for folder in finished.values():
        load_run(folder)


@pytest.mark.parametrize("command", [["show"], ["show", "--json"], ["report"]])
def test_every_reading_command_says_one_line(damaged, command, capsys):
    _, folder, name, said = damaged
    assert main([command[0], str(folder), *command[1:]]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"{folder / name}" in err and said in err, err


def test_compare_says_one_line(damaged, capsys):
    finished, folder, name, said = damaged
    if finished in (LLM_SAFETY, CONTAMINATION):
        pytest.skip("compare takes multiple-choice and safeguard runs")
    assert main(["compare", str(finished), str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{folder / name}" in err and said in err, err
