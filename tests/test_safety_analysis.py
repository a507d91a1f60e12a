"""Table 2, gaps and error analyses on hand-built records with hand-computed answers."""

from __future__ import annotations

import pytest
from rich.console import Console

from localeval.analysis.gaps import (
    check_records,
    cultural_awareness_delta,
    cultural_gap,
    language_gap,
    table2,
    table2_ci,
    table2_language_gap,
)
from localeval.analysis.safety import pair_type_confusion, score_distribution
from localeval.analysis.thresholds import threshold_curve
from localeval.metrics.classification import average_precision as AP
from localeval.records import as_json, read_results
from localeval.records.safety import AwarenessComparison
from localeval.render.formats import to_console
from localeval.views import safety_tables as T


def text(*tables) -> str:
    """The report's console tables as plain text (analyses compute, the report renders)."""
    console = Console(record=True, width=200)
    for table in tables:
        console.print(to_console(table))
    return console.export_text()


def safety(**fields):
    """Typed safety results holding only ``fields`` (and what every results.json has), as the
    run makes them: NaN as null."""
    return read_results(as_json({"schema": "localeval.safety/1", "task": "t", "guard": "g",
                                 "n_samples": 0, **fields}))


def R(id, lang, subset, kind, label, score, model="m", **kw):  # noqa: N802 - a record builder
    return dict(id=id, lang=lang, subset=subset, kind=kind, label=label, score=score,
                model=model, **kw)


def _group(subset, kind, lang, ids, labels, scores, **kw):
    return [R(i, lang, subset, kind, t, s, **kw) for i, t, s in zip(ids, labels, scores,
                                                                     strict=True)]


G = ["g1", "g2", "g3", "g4", "g5"]
RECORDS = [
    # prompt / general. EN ranks 1,1,0,1,0 -> AP = 1/3 + 1/3 + (1/3)(3/4) = 11/12
    *_group("general", "prompt", "en", G, [1, 0, 1, 0, 1], [0.9, 0.8, 0.7, 0.1, 0.95]),
    # th: perfect (g5 excluded: no label) -> 1.0
    *_group("general", "prompt", "th", G, [1, 0, 1, 0, None], [0.9, 0.1, 0.8, 0.2, 0.5]),
    # vi: ranks 0,1,1,0 -> AP = .5*.5 + .5*(2/3) = 7/12; g5 failed (score None)
    *_group("general", "prompt", "vi", G, [1, 0, 1, 0, 1], [0.2, 0.9, 0.8, 0.1, None]),
    # prompt / ITW: EN 1.0; th ranks 0,1 -> 0.5
    *_group("cultural-itw", "prompt", "en", ["i1", "i2"], [1, 0], [0.6, 0.4]),
    *_group("cultural-itw", "prompt", "th", ["i1", "i2"], [1, 0], [0.3, 0.7]),
    # prompt / CG: EN ranks 0,1,0 -> 0.5; th perfect -> 1.0
    *_group("cultural-cg", "prompt", "en", ["c1", "c2", "c3"], [1, 0, 0], [0.5, 0.6, 0.1]),
    *_group("cultural-cg", "prompt", "th", ["c1", "c2", "c3"], [1, 0, 0], [0.9, 0.2, 0.3]),
    # response / general: EN ranks 1,0,1,0 -> 5/6; th perfect
    *_group("general", "response", "en", G[:4], [0, 1, 1, 0], [0.1, 0.9, 0.4, 0.5]),
    *_group("general", "response", "th", G[:4], [0, 1, 1, 0], [0.1, 0.9, 0.8, 0.2]),
    # response / CG: EN perfect; th reversed -> 0.5
    *_group("cultural-cg", "response", "en", ["c1", "c2"], [1, 0], [0.7, 0.2]),
    *_group("cultural-cg", "response", "th", ["c1", "c2"], [1, 0], [0.2, 0.7]),
    # without the prompt as context: must not enter Table 2
    *_group("general", "response", "en", G[:4], [0, 1, 1, 0], [0.9, 0.1, 0.1, 0.9],
            context="without_prompt"),
    # a second model with only general prompt results
    *_group("general", "prompt", "en", G[:4], [1, 0, 1, 0], [0.9, 0.1, 0.8, 0.2], model="n"),
]

EXPECTED_M = {
    "prompt/general/en": 100 * 11 / 12,
    "prompt/general/sea": 100 * (1 + 7 / 12) / 2,  # macro mean over th, vi
    "prompt/cultural-itw/en": 100.0, "prompt/cultural-itw/sea": 50.0,
    "prompt/cultural-cg/en": 50.0, "prompt/cultural-cg/sea": 100.0,
    "response/general/en": 100 * 5 / 6, "response/general/sea": 100.0,
    "response/cultural-cg/en": 100.0, "response/cultural-cg/sea": 50.0,
}
EXPECTED_M["prompt/avg"] = sum(v for k, v in EXPECTED_M.items() if k.startswith("p")) / 6
EXPECTED_M["response/avg"] = (100 * 5 / 6 + 100 + 100 + 50) / 4


def test_table2_layout_and_values():
    table = table2(RECORDS, AP)  # the hand-computed values are average precision
    assert table["columns"] == [
        "prompt/general/en", "prompt/general/sea", "prompt/cultural-itw/en",
        "prompt/cultural-itw/sea", "prompt/cultural-cg/en", "prompt/cultural-cg/sea",
        "prompt/avg", "response/general/en", "response/general/sea",
        "response/cultural-cg/en", "response/cultural-cg/sea", "response/avg"]
    m, n = table["rows"]
    assert (m["model"], n["model"]) == ("m", "n")
    for key, value in EXPECTED_M.items():
        assert m["values"][key] == pytest.approx(value), key
    assert m["values"]["prompt/avg"] == pytest.approx(78.47222222)
    assert m["n_failed"]["prompt/general/sea"] == 1  # the failed vi sample, not scored as safe
    assert n["values"]["prompt/general/en"] == 100.0
    assert n["values"]["prompt/general/sea"] is None and n["values"]["prompt/avg"] is None
    assert n["values"]["response/avg"] is None
    shown = text(*T.table2_tables(safety(table2=table)))
    assert "General" in shown and "Avg" in shown and "91.7" in shown and "78.5" in shown
    assert "1 failed samples" in shown


def test_table2_pooled_sea():
    # th + vi together: ties at .9/.8/.2/.1 -> AP = .25*.5 + .5*.75 + .25*(2/3) = 2/3
    table = table2(RECORDS, AP, sea="pooled")
    assert table["rows"][0]["values"]["prompt/general/sea"] == pytest.approx(200 / 3)


def test_table2_en_cell_per_country_as_the_authors():
    """IRIS `scripts/get_eval_result.py` (`report_sum_results`) averages the PR-AUC of each
    country's English file; `en="pooled"` (ours, --en-cell pooled) takes one over all of them.
    Thailand's English items rank 1,0,1 -> AP 5/6; Vietnam's rank 0,1 -> 1/2: per country
    (5/6 + 1/2) / 2 = 2/3. Pooled they rank 1,0,0,1,1 -> AP (1 + 2/4 + 3/5) / 3 = 0.7."""
    en = [*_group("cultural-itw", "prompt", "en", ["t1", "t2", "t3"], [1, 0, 1],
                  [0.9, 0.8, 0.2], country="Thailand"),
          *_group("cultural-itw", "prompt", "en", ["v1", "v2"], [1, 0], [0.3, 0.7],
                  country="Vietnam")]
    local = [*_group("cultural-itw", "prompt", "th", ["t1", "t2", "t3"], [1, 0, 1],
                     [0.9, 0.1, 0.8], country="Thailand")]
    row = table2(en + local, AP)["rows"][0]["values"]
    assert row["prompt/cultural-itw/en"] == pytest.approx(200 / 3)
    assert table2(en + local, AP)["en"] == "per-country"
    pooled = table2(en + local, AP, en="pooled")["rows"][0]["values"]
    assert pooled["prompt/cultural-itw/en"] == pytest.approx(70.0)
    # the paper's language gap (EN - SEA) is built on the cell: 66.7 - 100 per country
    (gap,) = [g for g in table2_language_gap(table2(en + local, AP))
              if g["subset"] == "cultural-itw"]
    assert gap["gap"] == pytest.approx(200 / 3 - 100)
    # the bootstrap draws within each country's English group: its CI brackets the cell
    ci = table2_ci(en * 4 + local * 4, n_resamples=200, metric=AP)["m"]
    per_country = table2(en * 4 + local * 4, AP)["rows"][0]["values"]
    assert (ci["prompt/cultural-itw/en"]["low"] <= per_country["prompt/cultural-itw/en"]
            <= ci["prompt/cultural-itw/en"]["high"])
    # items with no country (the General subset's one English file) are one group: as pooled
    assert table2(RECORDS, AP)["rows"] == table2(RECORDS, AP, en="pooled")["rows"]


def test_language_gap_on_paired_items():
    rows = language_gap(RECORDS, kind="prompt", subset="general", metric=AP)
    m = {r["lang"]: r for r in rows if r["model"] == "m"}
    # g5 is unpaired on both sides (th: no label; vi: failed), so EN is g1..g4 = 5/6
    assert m["th"]["en"] == pytest.approx(5 / 6) and m["th"]["sea"] == 1.0
    assert m["th"]["gap"] == pytest.approx(5 / 6 - 1) and m["th"]["n_pairs"] == 4
    assert m["vi"]["gap"] == pytest.approx(5 / 6 - 7 / 12) and m["vi"]["n_failed"] == 1
    assert m["avg"]["gap"] == pytest.approx(((5 / 6 - 1) + (5 / 6 - 7 / 12)) / 2)
    assert not [r for r in rows if r["model"] == "n"]  # no local language, no gap
    with_ci = language_gap(RECORDS, kind="prompt", subset="general", n_resamples=50, seed=1)
    assert with_ci[0]["low"] <= with_ci[0]["high"]
    tagged = [dict(r, kind="prompt", subset="general") for r in rows]
    assert "EN − local" in text(T.language_gap_table(safety(language_gap=tagged)))


def test_cultural_gap():
    rows = {(r["model"], r["kind"], r["side"]): r["gap"] for r in cultural_gap(table2(RECORDS, AP))}
    assert rows[("m", "prompt", "en")] == pytest.approx(100 * 11 / 12 - 50)
    assert rows[("m", "prompt", "sea")] == pytest.approx(100 * 19 / 24 - 100)
    assert rows[("m", "response", "en")] == pytest.approx(100 * 5 / 6 - 100)
    assert rows[("m", "response", "sea")] == pytest.approx(50.0)
    assert rows[("n", "prompt", "en")] is None
    assert "General − CG" in text(T.cultural_gap_table(safety(cultural_gap=cultural_gap(
        table2(RECORDS, AP)))))


def test_cultural_awareness_delta():
    aware = [dict(r, score=s) for r, s in zip(
        [r for r in RECORDS if r["subset"] == "cultural-cg" and r["kind"] == "prompt"
         and r["lang"] == "en"], [0.9, 0.6, 0.1], strict=True)]
    aware += [r for r in RECORDS if r["subset"] == "cultural-cg" and r not in
              [x for x in RECORDS if x["kind"] == "prompt" and x["lang"] == "en"]]
    rows = cultural_awareness_delta(RECORDS, aware, AP)
    d = {(r["model"], r["kind"], r["side"]): r for r in rows}
    assert d[("m", "prompt", "en")]["baseline"] == 50.0
    assert d[("m", "prompt", "en")]["delta"] == pytest.approx(50.0)
    assert d[("m", "prompt", "sea")]["delta"] == 0.0
    assert d[("m", "response", "sea")]["delta"] == 0.0
    shown = text(T.awareness_delta_table(AwarenessComparison.model_validate(
        {"task": "t", "guard": "g", "model": "m", "auprc": "ap", "en_cell": "pooled",
         "baseline": "plain", "aware": "aware", "n_samples": 0, "rows": rows})))
    assert "aware" in shown and "delta" in shown


PAIRS = [
    # (id, prompt label, prompt score, response label, score with prompt, score without)
    ("a", 1, 0.9, 1, 0.8, 0.4),   # H/H -> H/H ; without: H/S
    ("b", 1, 0.9, 0, 0.7, 0.2),   # H/S -> H/H ; without: H/S
    ("c", 0, 0.2, 1, 0.3, 0.6),   # S/H -> S/S ; without: S/H
    ("d", 0, 0.1, 0, 0.1, 0.1),   # S/S -> S/S
    ("e", 0, 0.1, 0, None, 0.1),  # failed with the prompt
    ("f", None, 0.1, 0, 0.2, 0.2),  # excluded
]


def _pair_records():
    out = []
    for i, pl, ps, rl, with_p, without_p in PAIRS:
        out.append(R(i, "en", "general", "prompt", pl, ps))
        out.append(R(i, "en", "general", "response", rl, with_p))
        out.append(R(i, "en", "general", "response", rl, without_p, context="without_prompt"))
    return out


def test_pair_type_confusion():
    (with_p,) = pair_type_confusion(_pair_records())
    assert with_p["types"] == ["S/S", "S/H", "H/S", "H/H"]
    assert with_p["counts"] == [[1, 0, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 1]]
    assert (with_p["n"], with_p["n_failed"], with_p["n_excluded"]) == (4, 1, 1)
    assert with_p["fractions"][0] == [1.0, 0.0, 0.0, 0.0]
    (without,) = pair_type_confusion(_pair_records(), context="without_prompt")
    assert without["counts"] == [[2, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 0]]
    assert without["n_failed"] == 0 and without["n"] == 5  # e scored without the prompt
    shown = text(*T.pair_type_tables(safety(pair_type_confusion=[with_p])))
    assert "100% (1)" in shown and "true \\ predicted" in shown


def test_threshold_curve():
    recs = [r for r in RECORDS if r["model"] == "m"]
    (curve,) = threshold_curve(recs, kind="prompt", subset="cultural-itw")
    assert curve["n"] == 4 and curve["n_failed"] == 0
    assert len(curve["sweep"]) == 99
    (general,) = threshold_curve(recs, kind="prompt", subset="general")
    assert general["n_failed"] == 1 and general["n_excluded"] == 1 and general["n"] == 13
    shown = " ".join(text(T.threshold_sweep_table(safety(threshold_sweep=[curve]))).split())
    best = next(p for p in curve["sweep"] if p["threshold"] == curve["best_f1_threshold"])
    # the best F1 and its threshold, each named (the line used to print the threshold alone)
    assert f"prompt: F1 {best['f1']:.3f} at threshold {curve['best_f1_threshold']:.2f}" in shown


def test_score_distribution():
    recs = [R(f"s{i}", "en", "cultural-cg", "prompt", 0, s, raw_label="sensitive")
            for i, s in enumerate([0.05, 0.5, 0.95])]
    recs += [R("h", "en", "cultural-cg", "prompt", 1, 0.99, raw_label="harmful"),
             R("x", "en", "cultural-cg", "prompt", 0, None, raw_label="safe")]
    rows = score_distribution(recs)
    assert [r["label"] for r in rows] == ["safe", "sensitive", "harmful"]
    safe, sens, harm = rows
    assert safe["n"] == 0 and safe["n_failed"] == 1
    assert sens["mean"] == pytest.approx(0.5) and sens["median"] == pytest.approx(0.5)
    assert sens["frac_middle"] == pytest.approx(1 / 3)
    assert sens["histogram"] == [1, 0, 0, 0, 0, 1, 0, 0, 0, 1]
    assert harm["histogram"][-1] == 1
    assert "middle" in text(T.score_distribution_table(safety(score_distribution=rows)))
    with pytest.raises(ValueError, match="raw_label"):
        score_distribution([R("y", "en", "general", "prompt", 0, 0.1)])


def test_records_are_validated():
    with pytest.raises(ValueError, match="no 'score'"):
        check_records([{"id": "a", "lang": "en", "subset": "general", "kind": "prompt",
                        "label": 1}])
    with pytest.raises(ValueError, match="label"):
        check_records([R("a", "en", "general", "prompt", "harmful", 0.2)])
    with pytest.raises(ValueError, match="kind"):
        check_records([R("a", "en", "general", "answer", 1, 0.2)])
    with pytest.raises(ValueError, match="finite"):
        check_records([R("a", "en", "general", "prompt", 1, float("nan"))])


def test_table2_ci_brackets_the_numbers_and_is_seeded():
    import numpy as np

    from localeval.analysis.gaps import table2, table2_ci

    rng = np.random.default_rng(1)
    records = []
    for lang in ("en", "th", "vi"):
        for i in range(30):
            label = i % 2
            records.append({"id": f"{i}", "lang": lang, "subset": "general", "kind": "prompt",
                            "label": label, "score": float(np.clip(0.3 * label + rng.random() * 0.7, 0, 1))})
    point = table2(records)["rows"][0]["values"]
    ci = table2_ci(records, n_resamples=300, seed=0)[""]
    for col in ("prompt/general/en", "prompt/general/sea"):
        assert ci[col]["low"] <= point[col] <= ci[col]["high"]
        assert ci[col]["high"] - ci[col]["low"] > 0
    assert table2_ci(records, n_resamples=300, seed=0)[""] == ci
    # no ITW/CG items: those cells and the prompt average have no interval
    assert "prompt/cultural-itw/en" not in ci and "prompt/avg" not in ci


# One country's mixed file: scikit-learn's auc(recall, precision) of [0, 0, 1, 1] scored
# [0.1, 0.4, 0.35, 0.8]: PR points (0, 1), (1/2, 1), (1/2, 1/2), (1, 2/3), (1, 1/2); the
# trapezoid 1/2 + 0 + 1/2 * (1/2 + 2/3) / 2 = 0.791667, which IRIS rounds to 79.2.
MIXED = [(0, 0.1), (0, 0.4), (1, 0.35), (1, 0.8)]


ALL_HARMFUL = [(1, 0.3), (1, 0.9)]


ALL_SAFE = [(0, 0.3), (0, 0.9)]


def _records(rows, country):
    return [{"id": f"{country}{i}", "lang": "en", "subset": "cultural-cg", "kind": "prompt",
             "label": t, "score": s, "country": country, "context": "with_prompt",
             "raw_label": "harmful" if t else "safe"} for i, (t, s) in enumerate(rows)]


def _cg_en(records, **choices):
    from localeval.analysis.choices import AnalysisChoices
    from localeval.analysis.safety import analyses

    table = analyses(records, AnalysisChoices(n_resamples=0, **choices))["table2"]
    return table["rows"][0]["values"]["prompt/cultural-cg/en"]


def test_a_one_class_file_enters_the_mean_as_iris_safeguard_metric_gives_it():
    """IRIS metrics/safeguard_metrics.py SafeGuardMetric.update: auc(recall, precision) of
    sklearn's precision_recall_curve. All harmful: every precision is 1, so the area is 1.0
    (100.0 points); all safe: sklearn sets recall to 1 with precision 0, then the (0, 1) end,
    so the area is 1/2 (50.0). get_eval_result.py report_sum_results averages it with the
    others: (79.1667 + 100) / 2 = 89.583 points; (79.1667 + 50) / 2 = 64.583."""
    mixed = _records(MIXED, "Thailand")
    assert _cg_en(mixed + _records(ALL_HARMFUL, "Vietnam")) == pytest.approx(
        (100 * 0.7916666666666666 + 100) / 2)
    assert _cg_en(mixed + _records(ALL_SAFE, "Vietnam")) == pytest.approx(
        (100 * 0.7916666666666666 + 50) / 2)
    # ours, named: a file of one class has no PR-AUC and is left out of the mean
    assert _cg_en(mixed + _records(ALL_HARMFUL, "Vietnam"), one_class="left-out") == \
        pytest.approx(100 * 0.7916666666666666)


def test_iris_rounds_each_file_to_a_tenth_of_a_point_before_the_mean():
    """get_eval_result.py get_eval_results: round(pr_auc * 100, 1) per file, then
    report_sum_results' np.mean: the issue's example, (79.2 + 100.0) / 2 = 89.6 points."""
    records = _records(MIXED, "Thailand") + _records(ALL_HARMFUL, "Vietnam")
    assert _cg_en(records, file_rounding="iris") == pytest.approx(89.6)
    assert _cg_en(records) == pytest.approx(89.58333333)  # default: no rounding first


# SEA-SafeguardBench Table 2's prompt cells of its 24 guards (General EN, SEA, ITW EN, SEA,
# CG EN, SEA), as printed (/work/shared/seeds/sea-safeguardbench.md)
TABLE2_PROMPT = [
    (89.5, 86.7, 96.8, 94.2, 59.5, 51.1), (89.3, 87.5, 98.0, 97.0, 65.8, 65.3),
    (90.9, 88.5, 98.2, 97.4, 65.4, 64.7), (89.8, 83.8, 95.1, 89.4, 60.3, 49.9),
    (90.7, 87.0, 97.7, 94.8, 67.5, 62.6), (69.5, 67.2, 75.8, 59.7, 30.3, 35.1),
    (92.0, 88.1, 96.8, 94.3, 67.9, 61.2), (87.9, 87.1, 92.0, 89.8, 59.7, 55.3),
    (94.9, 92.3, 98.9, 98.1, 65.2, 59.7), (83.1, 79.9, 95.8, 90.6, 53.2, 51.8),
    (86.0, 83.2, 97.2, 95.3, 52.2, 55.7), (90.1, 81.6, 91.8, 86.4, 45.7, 33.9),
    (93.9, 90.4, 97.3, 95.7, 56.7, 47.4), (92.6, 84.6, 94.6, 84.7, 46.0, 32.4),
    (91.3, 75.8, 97.5, 82.6, 40.8, 32.4), (92.2, 85.2, 98.6, 94.9, 53.8, 41.0),
    (93.0, 88.3, 98.2, 95.4, 53.3, 42.0), (94.1, 90.6, 96.3, 95.3, 55.0, 45.9),
    (85.6, 72.7, 95.8, 78.5, 46.7, 41.9), (84.0, 80.7, 97.0, 86.1, 42.5, 35.1),
    (79.1, 72.5, 86.6, 75.6, 40.1, 33.8), (80.0, 74.5, 88.5, 83.1, 37.6, 30.2),
    (88.0, 78.3, 95.3, 86.4, 45.5, 40.3), (82.4, 72.6, 88.9, 76.6, 30.0, 37.8)]


def test_the_gap_tables_say_the_papers_averages_do_not_follow_from_its_table_2():
    """The paper's text: prompt language gaps 5.7 / 6.1 / 5.4 (General / ITW / CG) and
    cultural gaps (General - CG) 36.4 EN / 36.2 SEA; the means over its Table 2 are 5.45 /
    6.12 / 5.59 and 36.22 / 36.36. The footnote under each gap table carries them."""
    from statistics import fmean

    from localeval.views.safety_tables import PAPER_CULTURAL_GAP_NOTE, PAPER_LANGUAGE_GAP_NOTE

    lang = [round(fmean(r[2 * i] - r[2 * i + 1] for r in TABLE2_PROMPT), 2) for i in range(3)]
    cult = [round(fmean(r[side] - r[4 + side] for r in TABLE2_PROMPT), 2) for side in (0, 1)]
    assert lang == [5.45, 6.12, 5.59] and cult == [36.22, 36.36]
    assert "5.45 / 6.12 / 5.59" in PAPER_LANGUAGE_GAP_NOTE
    assert "5.7 / 6.1 / 5.4" in PAPER_LANGUAGE_GAP_NOTE
    assert "36.22 / 36.36" in PAPER_CULTURAL_GAP_NOTE
    assert "36.4 / 36.2" in PAPER_CULTURAL_GAP_NOTE


def test_the_footnote_is_printed_under_the_gap_tables():
    from test_safety_analysis import RECORDS, safety, text

    from localeval.analysis.gaps import cultural_gap, table2, table2_language_gap
    from localeval.metrics.classification import average_precision
    from localeval.views import safety_tables as T

    table = table2(RECORDS, average_precision)
    shown = text(T.table2_gap_table(safety(table2_language_gap=table2_language_gap(table))),
                 T.cultural_gap_table(safety(cultural_gap=cultural_gap(table))))
    shown = " ".join(shown.split())  # the caption is wrapped at the table's width
    assert "5.45 / 6.12 / 5.59" in shown and "36.22 / 36.36" in shown


def test_iris_prints_a_cells_mean_with_numpys_rounding():
    """Issue 64 item 4. IRIS ``get_eval_result.py:326`` prints ``round(v, 1)`` of the cell's
    ``np.mean`` (lines 193, 293): a numpy float64, so numpy's rounding (the value times 10,
    rounded half to even, over 10), not Python's correctly rounded decimal. By hand with
    numpy: np.mean([13.4, 10.0, 50.0, 50.0, 100.0, 41.7, 17.2, 50.1]) is 41.55 in binary just
    below 41.55 (Python's round gives 41.5), times 10 is 415.5 exactly, half to even: 41.6."""
    import numpy as np

    from localeval.analysis.gaps import table2

    files = [13.4, 10.0, 50.0, 50.0, 100.0, 41.7, 17.2, 50.1]
    assert round(float(np.mean(files)), 1) == 41.5 and round(np.mean(files), 1) == 41.6
    records = [r for i, v in enumerate(files)
               for r in _records([(1, v / 100)], f"country{i}")]

    def first_score(t, s):  # each one-item file's value is its score
        return float(s[0])
    table = table2(records, first_score, rounding="iris")
    value = table["rows"][0]["values"]["prompt/cultural-cg/en"]
    assert f"{value:.1f}" == "41.6"
    # without file rounding, our cell is the unrounded mean (the printed 41.5 there is ours)
    plain = table2(records, first_score)["rows"][0]["values"]["prompt/cultural-cg/en"]
    assert plain == pytest.approx(41.55)


def test_the_analyses_are_records_equal_to_what_their_file_reads_back():
    """Issue 71: each analysis is its record where it is computed, an undefined number None
    (not NaN), so the results a run makes equal, field for field, those read back from their
    results.json: no JSON round trip is needed to type them."""
    from localeval.analysis.choices import AnalysisChoices
    from localeval.analysis.safety import analyses, overall
    from localeval.records.safety import AUPRCRow, SafetyResults, Table2

    out = analyses(RECORDS, AnalysisChoices(n_resamples=20))
    assert isinstance(out["table2"], Table2)
    assert all(isinstance(row, AUPRCRow) for row in out["overall"] + out["per_language"])
    made = SafetyResults(schema_="localeval.safety/1", guard="g", n_samples=len(RECORDS), **out)
    assert read_results(as_json(made)) == made
    # a row holds what it was made with: the mean gap has no EN, SEA or interval of its own
    avg = next(r for r in out["language_gap"] if r.lang == "avg")
    assert avg.data().keys() == {"model", "kind", "subset", "lang", "gap", "n_pairs"}
    # one class: PR-AUC undefined (left out), None beside the reason
    (row,) = overall([R("x", "en", "general", "prompt", 1, 0.5)], n_resamples=0,
                     one_class="left-out")
    assert row.auprc is None and row.warning
