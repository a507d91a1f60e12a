"""records.base.Record.made: a record an analysis computes, validated once where it is made."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from localeval.records.safety import AUPRCRow


def test_an_undefined_number_is_none_a_tuple_a_list_and_a_wrong_value_is_refused():
    row = AUPRCRow.made({"kind": "prompt", "subset": "all", "n": 2, "auprc": math.nan,
                         "spread": (0.25, -math.inf)})
    assert row.auprc is None and row["spread"] == [0.25, None]
    assert "auprc" in row and "low" not in row  # what was given is set, the rest default
    with pytest.raises(ValidationError, match="a share from 0 to 1"):
        AUPRCRow.made({"kind": "prompt", "subset": "all", "n": 2, "auprc": 1.5})
    with pytest.raises(ValidationError, match="n"):
        AUPRCRow.made({"kind": "prompt", "subset": "all", "n": -1})
