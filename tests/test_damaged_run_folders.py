"""A hand-edited or damaged run folder is one line naming the file and the field, in every command
that reads it (show, report, export, compare) and in a rerun (which offers --overwrite), never a
traceback. Before the run folder had one validating reader, 8 of these edits gave tracebacks
(`KeyError: 'by_discipline'` in show, `AttributeError: 'list' object has no attribute 'get'`, ...).

A safeguard, LLM safety or contamination folder is refused the same way (issue 48 item 4): numbers
out of their range (a PR-AUC of 1.5, an n_failed of -3, a Table 2 cell of 150 points), and results
that the samples contradict: the counts recounted and the headline recomputed from samples.jsonl
(the overall PR-AUC per kind and context under the folder's recorded estimator; an LLM safety run's
rates; a contamination run's summaries per source, score and k), without the bootstrap. Before,
`show` and `compare` printed the edits as facts.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from offline_runs import AlwaysLetter, json_set, mcq_run, safeguard_run

from localeval import evaluate
from localeval.cli import main
from localeval.errors import LocalevalError
from localeval.records import RecordError
from localeval.store.runs import load_run, read_samples
from localeval.views.mcq import compare_mcq_runs


def _json(text):
    return lambda old: text


def _without(*path):
    """The JSON with the key at ``path`` (``"run", "status"``: run.status) deleted."""
    def edit(old):
        data = json.loads(old)
        *above, key = path
        inner = data
        for step in above:
            inner = inner[step]
        del inner[key]
        return json.dumps(data)
    return edit


# (file, edit, what the one line says)
MCQ_DAMAGE = {
    "config-array": ("config.json", _json("[1, 2]"), "should be a JSON object, not an array"),
    "config-run-5": ("config.json", lambda old: json.dumps({**json.loads(old), "run": 5}),
                     "field run: should be a JSON object (it is 5)"),
    "config-no-status": ("config.json", _without("run", "status"), "field run.status: missing"),
    "config-not-json": ("config.json", _json("{"), "not valid JSON"),
    "results-array": ("results.json", _json("[]"), "should be a JSON object, not an array"),
    "results-no-metrics": ("results.json", _without("metrics"), "field metrics: missing"),
    "results-no-micro": ("results.json", _without("metrics", "micro"),
                               "field metrics.micro: missing"),
    "results-string-number": ("results.json", lambda old: old.replace(
        '"n_samples": 12', '"n_samples": "12"'), "field n_samples: should be a valid integer"),
    # issue 48 item 4: `show` printed "Micro 150.00 ... over -6 questions"
    "results-acc-over-1": ("results.json", lambda old: json_set(old, ("metrics", "micro", "acc"), 1.5),
                           "field metrics.micro.acc: should be a share from 0 to 1 (it is 1.5)"),
    "results-n-negative": ("results.json", lambda old: json_set(old, ("metrics", "micro", "n"), -6),
                           "field metrics.micro.n: should be greater than or equal to 0"),
    # results that the samples contradict (a limit or a count edited by hand)
    "results-disagree": ("results.json", lambda old: json_set(old, ("metrics", "micro", "correct"),
                                                          11),
                         "field metrics.micro: 11 right of 12, but samples.jsonl has"),
    "samples-correct-flipped": ("samples.jsonl", lambda old: old.replace(
        '"correct": false', '"correct": true', 1), "line 2: field correct: true, but pred 'A' "
        "is not gold 'B'"),
    "samples-null": ("samples.jsonl", lambda old: "null\n" + old,
                     "line 1 should be a JSON object, not null"),
    "samples-array": ("samples.jsonl", lambda old: old + "[1]\n",
                      "line 13 should be a JSON object, not an array"),
    "samples-no-id": ("samples.jsonl", lambda old: '{"subject": "x"}\n' + old,
                      "line 1: field id: missing"),
}


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
SAFETY_DAMAGE = {
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


# Every case: (kind of run, file edited, edit, file the one line names, what it says)
DAMAGE = {**{case: ("multiple-choice", name, edit, name, said)
             for case, (name, edit, said) in MCQ_DAMAGE.items()},
          **{case: (kind, name, edit, "results.json", said)
             for case, (kind, name, edit, said) in SAFETY_DAMAGE.items()}}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs") / "run"
    mcq_run(folder)
    return folder


@pytest.fixture(scope="module")
def safeguard(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs") / "safeguard"
    safeguard_run(folder, auprc="trapezoid")
    return folder


@pytest.fixture
def runs(finished, safeguard):
    """A finished folder of each kind of run, by the kind DAMAGE names."""
    return {"multiple-choice": finished, "safeguard": safeguard, "llm-safety": LLM_SAFETY,
            "contamination": CONTAMINATION}


@pytest.fixture
def damaged(request, runs, tmp_path):
    """A copy of a finished folder with one DAMAGE case's edit (the case is the parameter):
    the finished folder, the damaged one, the file its one line names, what it says."""
    kind, edited, edit, named, said = DAMAGE[request.param]
    folder = tmp_path / "damaged"
    shutil.copytree(runs[kind], folder)
    path = folder / edited
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    return runs[kind], folder, named, said


# Every command that reads a folder: export on multiple-choice folders
READING = {"multiple-choice": [["show"], ["show", "--json"], ["export"],
                               ["export", "--format", "csv"], ["report"]],
           "other": [["show"], ["show", "--json"], ["report"]]}


def test_the_unedited_folders_load(runs):
    for folder in runs.values():
        load_run(folder)


READ_CASES = [(case, command) for case in sorted(DAMAGE)
              for command in READING["multiple-choice" if DAMAGE[case][0] == "multiple-choice"
                                     else "other"]]


@pytest.mark.parametrize("damaged, command", READ_CASES, indirect=["damaged"],
                         ids=[f"{case}-{' '.join(command)}" for case, command in READ_CASES])
def test_every_reading_command_says_one_line(damaged, command, capsys):
    _, folder, name, said = damaged
    assert main([command[0], str(folder), *command[1:]]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"{folder / name}" in err and said in err, err


@pytest.mark.parametrize("damaged", sorted(DAMAGE), indirect=True)
def test_compare_says_one_line(damaged, capsys):
    finished, folder, name, said = damaged
    if finished in (LLM_SAFETY, CONTAMINATION):
        pytest.skip("compare takes multiple-choice and safeguard runs")
    assert main(["compare", str(finished), str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{folder / name}" in err and said in err, err


@pytest.mark.parametrize("damaged", sorted(MCQ_DAMAGE), indirect=True)
def test_a_rerun_offers_overwrite(damaged, finished):
    _, folder, name, said = damaged
    data = finished.parent / "exam.jsonl"  # the settings the damaged folder's run was made with
    with pytest.raises(LocalevalError) as e:
        evaluate(task="my-exam", model=AlwaysLetter("A"), data=data, shots=0, output=folder,
                 quiet=True)
    assert name in str(e.value) and said in str(e.value) and "--overwrite" in str(e.value)
    record = evaluate(task="my-exam", model=AlwaysLetter("A"), data=data, shots=0,
                      output=folder, quiet=True, overwrite=True)
    assert record.status == "finished" and record.results.n_samples == 12


def test_compare_names_a_sample_field_it_needs(finished, tmp_path, capsys):
    folder = tmp_path / "edited"
    shutil.copytree(finished, folder)
    lines = (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    edited = json.loads(lines[2])
    del edited["subject"]
    lines[2] = json.dumps(edited)
    (folder / "samples.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["show", str(folder)]) == 0  # show reads results.json only
    capsys.readouterr()
    assert main(["compare", str(finished), str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{folder / 'samples.jsonl'}: line 3: field subject: missing" in err


@pytest.mark.parametrize("name", ["results.json", "samples.jsonl"])
def test_a_pipe_in_place_of_a_file_is_one_line_not_a_hang(name, finished, tmp_path):
    """Issue 48 item 9: before, a named pipe (FIFO) as results.json or samples.jsonl had ``show``
    wait for ever for a writer. In a child process, so a hang fails the test instead of being
    one."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    folder = tmp_path / "piped"
    shutil.copytree(finished, folder)
    (folder / name).unlink()
    os.mkfifo(folder / name)
    try:
        done = subprocess.run([sys.executable, "-m", "localeval.cli", "show", str(folder)],
                              capture_output=True, text=True, timeout=60, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"show waited for ever on a pipe as {name}")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"{folder / name}: not a plain file" in done.stderr


def test_compare_of_a_run_kept_in_memory_names_the_missing_field(finished):
    """A record with no folder (a script's) lacking a field: the same one line, not a crash on
    its missing folder."""
    record = load_run(finished)
    samples = list(record.samples)
    samples[2] = type(samples[2]).model_validate(
        {k: v for k, v in samples[2].data().items() if k != "subject"})
    in_memory = dataclasses.replace(record, samples=samples, folder=None)
    with pytest.raises(LocalevalError, match=r"^samples\.jsonl: line 3: field subject: missing$"):
        compare_mcq_runs(finished, in_memory)


def test_a_sample_line_of_no_kind_names_its_field(tmp_path):
    """read_samples without a kind checks what every sample holds: a line without an id, or
    with an id that is neither text nor a number, is one line naming the file, line and field."""
    path = tmp_path / "samples.jsonl"
    for line, field in (('{"subject": "x"}', "field id: missing"), ('{"id": [1]}', "field id")):
        path.write_text('{"id": "a"}\n' + line + "\n", encoding="utf-8")
        with pytest.raises(RecordError, match=rf"^samples\.jsonl: line 2: {field}"):
            read_samples(path)
    path.write_text('{"id": "a", "extra": 1}\n{"id": 2}\n', encoding="utf-8")
    assert [s.data() for s in read_samples(path)] == [{"id": "a", "extra": 1}, {"id": 2}]


def _edit_sample(line, change):
    """samples.jsonl with its ``line``-th sample (1-based) changed by ``change(sample)``."""
    def edit(old):
        rows = [json.loads(text) for text in old.splitlines()]
        change(rows[line - 1])
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    return edit


def _duplicate_id(sample):
    sample["id"] = "Tiếng Việt/0"


# issue 48 item 4: compare took each of these as a fact (exit 0)
SAMPLE_EDITS = {
    "correct-on-a-wrong-answer": (_edit_sample(2, lambda s: s.update(correct=True)),
                                  "line 2: field correct: true, but pred 'A' is not gold 'B'"),
    "correct-as-text": (_edit_sample(1, lambda s: s.update(correct="yes")),
                        "line 1: field correct: should be true, false or null (it is 'yes')"),
    "a-duplicated-id": (_edit_sample(2, _duplicate_id),
                        "line 2: field id: 'Tiếng Việt/0' is on line 1 too"),
}


@pytest.mark.parametrize("edit", sorted(SAMPLE_EDITS))
def test_compare_refuses_samples_that_contradict_themselves(edit, finished, tmp_path, capsys):
    change, said = SAMPLE_EDITS[edit]
    folder = tmp_path / "edited"
    shutil.copytree(finished, folder)
    path = folder / "samples.jsonl"
    path.write_text(change(path.read_text(encoding="utf-8")), encoding="utf-8")
    assert main(["compare", str(finished), str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}: {said}" in err, err
