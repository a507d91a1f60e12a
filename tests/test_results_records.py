"""results.json read back as its task kind's record: every key an analysis writes is a declared,
validated field (issue 75: safeguard runs' threshold_grid was written as an undeclared extra,
so a wrong value read back passed unnoticed)."""

import json
from pathlib import Path

import pytest

from localeval.records import RecordError, read_results
from localeval.records.safety import SafetyResults

RESULTS = Path(__file__).parent / "fixtures" / "runs-a9a91f9" / "safety-prompts" / "results.json"


def test_threshold_grid_is_a_field_read_back():
    data = json.loads(RESULTS.read_text(encoding="utf-8"))
    results = read_results(data)
    assert isinstance(results, SafetyResults)
    assert results.threshold_grid == "iris"
    assert "threshold_grid" not in (results.model_extra or {})
    assert results.data() == data  # written back as it was read


def test_a_threshold_grid_of_no_known_kind_is_refused():
    data = json.loads(RESULTS.read_text(encoding="utf-8"))
    data["threshold_grid"] = "percentiles"
    with pytest.raises(RecordError, match="threshold_grid"):
        read_results(data)
