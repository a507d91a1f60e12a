"""Issue 52 item 10: the Python API printed transformers' deprecation notices (`past_key_values
is deprecated`, a FutureWarning) that the CLI hides. `evaluate` now hides them while it runs,
and leaves the caller's warning filters and transformers' verbosity as they were."""

from __future__ import annotations

import subprocess
import sys

import pytest
from tiny_models import REPO, make_model

SCRIPT = """
import sys, warnings
from pathlib import Path
import localeval
from localeval.demo.mcq import SAMPLE_MCQ
filters = list(warnings.filters)
localeval.evaluate(task="tmlu", model="hf:" + sys.argv[1], data=Path(str(SAMPLE_MCQ)), limit=2,
                   output=Path(sys.argv[2]), store=False, quiet=True)
# the libraries the run imports add filters of their own; none that silences a whole category
added = [f for f in warnings.filters if f not in filters]
assert not [f for f in added if f[0] == "ignore" and f[1] is None and f[3] is None], added
import transformers
assert transformers.utils.logging.get_verbosity() == transformers.logging.WARNING
print("ok")
"""


@pytest.mark.slow
def test_evaluate_hides_other_libraries_deprecation_notices_while_it_runs(tmp_path):
    model = make_model(tmp_path / "model")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(REPO / "src"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(model), str(tmp_path / "run")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    assert "deprecated" not in done.stderr and "FutureWarning" not in done.stderr, done.stderr
