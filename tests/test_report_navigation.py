"""What a first afternoon found in the report and in compare (issue 36, items 12 and 14): the
headline tables and the figures one click from the top, the rest folded; Table 2's Avg beside
the pooled PR-AUC, each saying which it is; disciplines in the same order in figures and
tables; headers unabbreviated in HTML; compare naming each guard's model; p-values printed one
way."""

from __future__ import annotations

import re

from offline_runs import mcq_run, safeguard_run

from localeval.cli import main
from localeval.records import read_results
from localeval.report.html import render
from localeval.store.runs import as_stored, load_run
from localeval.views.mcq_figures import mcq_figures
from localeval.views.mcq_tables import discipline_table, p_value


def test_headline_tables_open_the_rest_folded_and_one_click_away(tmp_path):
    record = safeguard_run(tmp_path / "run")
    html = render([load_run(record.folder)])
    folded = re.findall(r'<details class="table" id="table-(\d+)"( open)?>', html)
    assert len(folded) >= 8
    opened = [k for k, is_open in folded if is_open]
    assert opened == ["1", "2", "3"]  # Overall, then Table 2 for prompts and for responses
    jump = re.search(r'<nav class="jump">(.*?)</nav>', html).group(1)
    assert '"#figures"' in jump and '"#table-2"' in jump and '"#table-4"' not in jump
    assert html.count('<ol class="tables-list">') == 1


def test_table2_avg_and_the_pooled_pr_auc_say_which_is_which(tmp_path):
    record = safeguard_run(tmp_path / "run")
    html = render([load_run(record.folder)])
    avg = record.results.table2.rows[0].values["prompt/avg"]
    assert f"{avg:.1f}</div><div class=\"label\">Table 2 Avg, prompts: the mean of its 6 " \
           "cells" in html
    assert "PR-AUC, prompts, every language and subset pooled, n=" in html


def _tmlu_results():
    metrics = {"micro": {"n": 3, "acc": 0.5}, "by_discipline": {
        d: {"n": 1, "acc": 0.5} for d in ("Humanities", "Other", "STEM", "Taiwan Specific")}}
    return read_results(as_stored({
        "schema": "localeval.mcq/1", "task": "tmlu", "n_samples": 4, "method": "likelihood",
        "shots": 5, "disciplines": ["STEM", "Humanities", "Taiwan Specific", "Other"],
        "metrics": metrics, "model": "m"}))


def test_figures_follow_the_tables_discipline_order_and_html_says_it_in_full(monkeypatch):
    from localeval.render.formats import to_html
    from localeval.views import mcq_figures as module

    results = _tmlu_results()
    table = discipline_table(results)
    assert table.header == ["Model", "STEM", "Humanities", "Taiwan Spe.", "Other", "Average"]
    kept, finish = [], module.finish
    monkeypatch.setattr(module, "finish", lambda fig, *a: kept.append(fig) or finish(fig, *a))
    names = [f.name for f in mcq_figures(results, None)]
    ax = kept[names.index("accuracy_by_discipline")].axes[0]
    ticks = [t.get_text().replace("\n", " ") for t in ax.get_xticklabels()]
    assert ticks == ["STEM", "Humanities", "Taiwan Specific", "Other"]  # not sorted by name
    html = to_html(table)
    assert "Taiwan Specific" in html and "Taiwan Spe." not in html


def test_compare_names_each_guard_with_its_model(tmp_path, capsys):
    a = safeguard_run(tmp_path / "a", model_name="org/guard-one")
    b = safeguard_run(tmp_path / "b", model_name="org/guard-two")
    assert main(["compare", str(a.folder), str(b.folder)]) == 0
    out = capsys.readouterr().out
    assert "(zero-shot on guard-one · sea-safeguard" in out and "(zero-shot on guard-two · " in out


def test_p_values_are_printed_one_way(tmp_path, capsys):
    assert [p_value(p).shown() for p in (0.95, 0.9131, 1, 0.00012)] == \
        ["0.950", "0.913", "1.000", "<0.001"]
    run = mcq_run(tmp_path / "run")
    assert main(["compare", str(run.folder), str(run.folder)]) == 0
    assert "1.000" in capsys.readouterr().out
