"""Table 2's ⚠ footnote names each cell whose PR-AUC says nothing on one unbroken piece of the
line (issue 69: "hashed-guard CG" at the end of one line and "EN (Malaysia)" on the next)."""

from __future__ import annotations

import re

from offline_runs import safeguard_run

from localeval.views.safety_tables import table2_tables


def test_the_footnote_never_breaks_inside_a_cell_name(tmp_path):
    run = safeguard_run(tmp_path / "run", limit=2)
    captions = [t.caption for t in table2_tables(run.results)]
    assert captions and all("⚠" in c for c in captions)
    for caption in captions:
        assert "\n" not in caption
        # the model and the cell, one piece: no plain space inside "hashed-guard CG EN"
        assert re.search("hashed-guard\u00a0CG\u00a0EN", caption)
        assert "hashed-guard " not in caption


def test_a_guard_with_no_model_of_its_own_names_its_row_by_the_guard(tmp_path):
    # a moderation API's backend has no model name (issue 69: its row read "(model)")
    run = safeguard_run(tmp_path / "run", model_name="")
    rows = [t.rows[0].cells[0].shown() for t in table2_tables(run.results)]
    assert rows == ["zero-shot", "zero-shot"]
    assert run.results.model == "zero-shot"
