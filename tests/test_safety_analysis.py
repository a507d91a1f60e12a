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
