"""Threshold transfer and Fig. 6's counts on hand-built records, the report's new tables, and
`localeval compare`."""

from __future__ import annotations

import json
import shutil

import pytest
from rich.console import Console

from localeval.analysis.choices import AnalysisChoices
from localeval.analysis.safety import analyses, overall, score_distribution
from localeval.analysis.thresholds import threshold_transfer
from localeval.api import evaluate
from localeval.cli import main
from localeval.demo.safety import SAMPLE_SAFETY, build_safety_demo_model
from localeval.records import as_json, read_results
from localeval.records.samples import SafetySample
from localeval.render.formats import to_console
from localeval.report.console import print_results
from localeval.store.runs import as_stored, read_samples
from localeval.views import safety_tables as T


def R(id, lang, label, score, kind="prompt", context="with_prompt"):  # noqa: N802
    return dict(id=id, lang=lang, subset="general", kind=kind, context=context, label=label,
                score=score, model="m", raw_label="harmful" if label else "safe")


# en, harmful = score > t (IRIS's rule, the default): F1 is 4/6 below 0.10, 4/5 below 0.30,
# 1.0 from 0.30 to below 0.35, 2/3 below 0.90, so the lowest best-F1 threshold of 0.01..0.99 is
# 0.30 (with score >= t every boundary moves up one grid point: 0.31).
EN = [R("1", "en", 1, 0.9), R("2", "en", 1, 0.35), R("3", "en", 0, 0.3), R("4", "en", 0, 0.1)]
TH = [R("1", "th", 1, 0.8), R("2", "th", 1, 0.4), R("3", "th", 1, 0.2), R("4", "th", 0, 0.45),
      R("5", "th", 0, 0.05)]


def test_threshold_transfer_by_hand():
    # The without-prompt responses and a failed th sample must not change anything.
    noise = [R("9", "en", 1, 0.01, "response", "without_prompt"), R("6", "th", 1, None)]
    (block,) = threshold_transfer(EN + TH + noise, "prompt", "en")
    assert block["threshold"] == 0.3 and block["note"] is None
    assert (block["n_calibration"], block["n_calibration_harmful"]) == (4, 2)
    (th,) = block["languages"]  # en itself is never reported
    assert (th["lang"], th["n"], th["n_harmful"], th["n_failed"]) == ("th", 5, 3, 1)
    # At 0.5 only 0.8 is called harmful: TP 1, FP 0, FN 2, TN 2.
    d = th["default"]
    assert (d["tp"], d["fp"], d["fn"], d["tn"]) == (1, 0, 2, 2)
    assert d["precision"] == 1.0 and d["recall"] == pytest.approx(1 / 3)
    assert d["f1"] == pytest.approx(0.5) and d["fpr"] == 0.0
    # At 0.30: 0.8, 0.45, 0.4 are harmful: TP 2, FP 1, FN 1, TN 1.
    c = th["calibrated"]
    assert c["threshold"] == 0.3 and (c["tp"], c["fp"], c["fn"], c["tn"]) == (2, 1, 1, 1)
    assert c["precision"] == pytest.approx(2 / 3) and c["recall"] == pytest.approx(2 / 3)
    assert c["f1"] == pytest.approx(2 / 3) and c["fpr"] == 0.5

    out = analyses(EN + TH, AnalysisChoices(n_resamples=0))
    assert out["calibration"] == "en" and out["threshold_rule"] == "gt"
    assert out["threshold_transfer"] == threshold_transfer(EN + TH, "prompt", "en")
    (ge,) = analyses(EN + TH, AnalysisChoices(n_resamples=0,
                                              threshold_rule="ge"))["threshold_transfer"]
    assert ge["threshold"] == 0.31 and ge["languages"][0]["calibrated"]["tp"] == 2


def test_threshold_transfer_skips_with_a_note():
    one_class = [r for r in EN if r["label"] == 1]
    (b,) = threshold_transfer(one_class + TH, "prompt", "en")
    assert b["threshold"] is None and b["languages"] == [] and "only harmful" in b["note"]
    (b,) = analyses(EN + TH, AnalysisChoices(n_resamples=0,
                                             calibrate_on="vi"))["threshold_transfer"]
    assert b["threshold"] is None and "no scored prompt samples" in b["note"]
    assert "'vi'" in b["note"]
    (b,) = threshold_transfer(EN, "prompt", "en")  # nothing to apply it to
    assert b["threshold"] == 0.3 and b["languages"] == [] and "no language other" in b["note"]
    results = read_results(as_stored({"schema": "localeval.safety/1", "guard": "g",
                                      "n_samples": 0, "threshold_transfer": [b.data()],
                                      "calibration": "en"}))
    table, notes = T.threshold_transfer_table(results)
    assert table is None and notes == [f"Threshold transfer, prompt: {b['note']}"]


def test_threshold_transfer_calibrate_on_other_language():
    (b,) = threshold_transfer(EN + TH, "prompt", "th")
    assert b["calibrate_on"] == "th" and [r["lang"] for r in b["languages"]] == ["en"]


def test_score_distribution_counts_each_item_once():
    """Fig. 6: a response judged with and without its prompt is one item (the demo's figure
    said safe n=48 for its 24 safe responses)."""
    def pair(id, prompt_raw, response_raw, score):
        p = R(id, "en", int(prompt_raw == "harmful"), score)
        p["raw_label"] = prompt_raw
        responses = [dict(R(id, "en", int(response_raw != "safe"), score, "response", context),
                          raw_label=response_raw) for context in ("with_prompt", "without_prompt")]
        return [p, *responses]

    records = [*pair("1", "harmful", "safe", 0.9), *pair("2", "safe", "safe", 0.1),
               *pair("3", "sensitive", "harmful", 0.6)]
    rows = {(r["kind"], r["label"]): r for r in score_distribution(records)}
    assert {k: r["n"] for k, r in rows.items()} == {
        ("prompt", "safe"): 1, ("prompt", "sensitive"): 1, ("prompt", "harmful"): 1,
        ("response", "safe"): 2, ("response", "harmful"): 1}
    assert rows[("response", "safe")]["histogram"] == [0, 1, 0, 0, 0, 0, 0, 0, 0, 1]
    assert {r["context"] for r in rows.values()} == {"with_prompt"}
    alone = score_distribution(records, context="without_prompt")  # responses only
    assert [(r["kind"], r["label"], r["n"]) for r in alone] == [("response", "safe", 2),
                                                               ("response", "harmful", 1)]
    distribution = analyses(records, AnalysisChoices(n_resamples=0))["score_distribution"]
    assert distribution == score_distribution(records)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("safety-runs")
    model = f"hf:{build_safety_demo_model(root / 'model')}"
    for name, aware in (("plain", False), ("aware", True)):
        evaluate(task="sea-safeguard", model=model, data=str(SAMPLE_SAFETY), limit=2,
                 guard_options={"cultural_awareness": aware, "label_scores": "full",
                                "verdict_position": "fixed"},
                 output=root / name, quiet=True,
                 n_resamples=10)
    return root, model


def _render(table) -> list[str]:
    console = Console(record=True, width=200)
    console.print(to_console(table))
    return console.export_text().splitlines()


@pytest.mark.slow
def test_report_prints_new_tables(runs):
    root, _ = runs
    results = json.loads((root / "plain" / "results.json").read_text())
    assert results["calibration"] == "en"
    assert {b["kind"] for b in results["threshold_transfer"]} == {"prompt", "response"}
    console = Console(record=True, width=200)
    print_results(read_results(results), console)
    text = console.export_text()
    for title in ("Pair types (Fig. 4) · response judged with the prompt",
                  "Pair types (Fig. 4) · response judged without the prompt",
                  "Scores by gold label (Fig. 6)", "Threshold sweep (Fig. 5) · every 0.1",
                  "Threshold transfer · best-F1 threshold chosen on en"):
        assert title in text
    typed = read_results(results)
    sweep = T.threshold_sweep_table(typed)
    assert [row[1] for row in sweep.texts()][:9] == [f"0.{i}0" for i in range(1, 10)]
    # The new tables fit an 80-column terminal without wrapping.
    tables = [*T.pair_type_tables(typed), T.score_distribution_table(typed), sweep,
              T.threshold_transfer_table(typed)[0]]
    for table in tables:
        assert max(len(line) for line in _render(table)) <= 80, table.title
    # Only the contexts asked for.
    assert len(T.pair_type_tables(typed, ("with_prompt",))) == 1


@pytest.mark.slow
def test_report_reads_old_results_without_new_keys(runs):
    root, _ = runs
    results = json.loads((root / "plain" / "results.json").read_text())
    for key in ("threshold_transfer", "calibration", "pair_type_confusion",
                "score_distribution", "threshold_sweep"):
        results.pop(key)
    console = Console(record=True, width=200)
    print_results(read_results(results), console)
    assert "Threshold" not in console.export_text()


@pytest.mark.slow
def test_cli_compare_prints_delta(runs, capsys):
    root, _ = runs
    assert main(["compare", str(root / "plain"), str(root / "aware")]) == 0
    out = capsys.readouterr().out
    assert "Cultural awareness (Table 3)" in out and "delta" in out
    assert "prompt" in out and "response" in out and "SEA" in out


@pytest.mark.slow
def test_compare_values_match_gaps(runs):
    from localeval.analysis.gaps import cultural_awareness_delta
    from localeval.api import compare_runs, load_results

    root, _ = runs
    got = compare_runs(root / "plain", root / "aware")
    base = [s for s in load_results(root / "plain").samples if s["subset"] == "cultural-cg"]
    new = [s for s in load_results(root / "aware").samples if s["subset"] == "cultural-cg"]
    want = cultural_awareness_delta(base, new)
    assert len(got["rows"]) == len(want) == 4
    for g, w in zip(got["rows"], want):
        if w.delta is not None:  # undefined (one class) on neither side
            assert g["delta"] == pytest.approx(w["aware"] - w["baseline"])


def _one_line_error(argv, capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    return err


@pytest.mark.slow
def test_compare_errors(runs, tmp_path, capsys):
    root, _ = runs
    plain, aware = str(root / "plain"), str(root / "aware")
    mcq = tmp_path / "mcq"
    shutil.copytree(root / "plain", mcq)
    (mcq / "results.json").write_text(json.dumps({  # a whole one-question MCQ run
        "schema": "localeval.mcq/1", "task": "tmlu", "n_samples": 1, "method": "likelihood",
        "shots": 0, "metrics": {"micro": {"n": 1, "acc": 1.0}}}))
    (mcq / "samples.jsonl").write_text(json.dumps({"id": "q1", "subject": "s", "pred": "A",
                                                   "gold": "A", "correct": True}) + "\n")
    assert "is an mcq run and" in _one_line_error(["compare", str(mcq), aware], capsys)
    assert "is not a run folder" in _one_line_error(["compare", str(tmp_path), aware], capsys)
    # Culture-aware first: not Table 3's order, so the generic per-language comparison.
    assert main(["compare", aware, plain]) == 0
    assert "paired bootstrap" in capsys.readouterr().out

    fewer = tmp_path / "fewer"
    shutil.copytree(root / "aware", fewer)
    lines = (fewer / "samples.jsonl").read_text().splitlines()
    cg = next(i for i, x in enumerate(lines) if json.loads(x)["subset"] == "cultural-cg")
    (fewer / "samples.jsonl").write_text("\n".join(lines[:cg] + lines[cg + 1:]) + "\n")
    # a run of one item fewer: its count and its overall rows as the samples left give them
    # (the folder is checked against its samples where it is read)
    results = json.loads((fewer / "results.json").read_text())
    kept = read_samples(fewer / "samples.jsonl", SafetySample)
    rows = as_json(overall(kept, n_resamples=0, auprc=results["auprc"]))
    (fewer / "results.json").write_text(json.dumps(dict(results, overall=rows,
                                                        n_samples=results["n_samples"] - 1)))
    assert "different items" in _one_line_error(["compare", plain, str(fewer)], capsys)

    other = tmp_path / "other-task"
    shutil.copytree(root / "aware", other)
    results = json.loads((other / "results.json").read_text())
    (other / "results.json").write_text(json.dumps(dict(results, task="safety-prompts")))
    assert "different tasks" in _one_line_error(["compare", plain, str(other)], capsys)


@pytest.mark.slow
def test_cli_calibrate_on(runs, tmp_path, capsys):
    _, model = runs
    out = tmp_path / "run"
    assert main(["run", "--task", "sea-safeguard", "--data", str(SAMPLE_SAFETY), "--model",
                 model, "--limit", "2", "--bootstrap", "0", "--calibrate-on", "th",
                 "--guard-option", "label_scores=full",  # the demo's random model: not top 2
                 "--guard-option", "verdict_position=fixed",
                 "--output", str(out), "--quiet", "--all"]) == 0
    results = json.loads((out / "results.json").read_text())
    config = json.loads((out / "config.json").read_text())
    assert results["calibration"] == "th" and config["calibrate_on"] == "th"
    for block in results["threshold_transfer"]:
        assert block["calibrate_on"] == "th"
        assert "th" not in [r["lang"] for r in block["languages"]]
    text = capsys.readouterr().out
    # th prompts have both labels; with --limit 2 the th responses are all safe: a note.
    assert "chosen on th" in text
    assert "Threshold transfer, response: skipped" in text


def test_a_run_in_one_language_prints_no_threshold_transfer_note(tmp_path):
    """Issue 69: an English-only run (XSTest, JBB through safety-responses) printed
    "Threshold transfer, response: no language other than 'en' ..." on stdout: there is no
    transfer to speak of."""
    from offline_runs import safeguard_run

    from localeval.views.safety_tables import safety_notes

    notes = [str(n) for n in safety_notes(safeguard_run(tmp_path / "en", langs=["en"]).results)]
    assert not any(n.startswith("Threshold transfer") for n in notes)


def test_the_label_policy_line_names_only_subsets_the_run_has(tmp_path):
    """Issue 69: "as safe in cultural-cg" on runs without that subset (JBB, XSTest)."""
    from offline_runs import safeguard_run

    general = safeguard_run(tmp_path / "general", subsets=["general"]).results
    assert "cultural-cg" not in general.label_policy["prompt"]
    every = safeguard_run(tmp_path / "every").results
    assert "as safe in cultural-cg" in every.label_policy["prompt"]
