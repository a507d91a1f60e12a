"""Third-party notices (transformers' deprecations) are hidden unless --debug, on the command
line and in the Python API. Issue 52 item 10: the Python API printed transformers' deprecation notices (`past_key_values
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


@pytest.fixture
def cmmlu(shared):
    return str(shared / "data" / "cmmlu")


def test_third_party_deprecations_are_silenced_unless_debug(tmp_path):
    """transformers' `past_key_values is deprecated` (a FutureWarning and a log line) printed on
    every hf: run, --quiet or not; it is for transformers' users' developers, not a result."""
    import subprocess
    import sys

    probe = ("import sys, warnings, logging\n"
             "from localeval.cli import main, quiet_third_party\n"
             "if '--debug' not in sys.argv: quiet_third_party()\n"
             "from transformers.utils import logging as tlog\n"
             "tlog.get_logger('transformers.x').warning('past_key_values are deprecated')\n"
             "warnings.warn('`past_key_values` is deprecated', FutureWarning)\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != "TRANSFORMERS_VERBOSITY"}
    quiet = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                           env=env, check=True)
    assert quiet.stderr == ""
    debug = subprocess.run([sys.executable, "-c", probe, "--debug"], capture_output=True,
                           text=True, env=env, check=True)
    assert "[transformers] past_key_values are deprecated" in debug.stderr
    assert "FutureWarning: `past_key_values` is deprecated" in debug.stderr


@pytest.mark.slow
def test_an_hf_run_prints_no_transformers_deprecation(tiny_llama, cmmlu, tmp_path):
    import subprocess
    import sys

    argv = [sys.executable, "-m", "localeval.cli", "run", "--task", "cmmlu", "--data", cmmlu,
            "--subjects", "agronomy", "--limit", "2", "--model", f"hf:{tiny_llama}", "--quiet",
            "--no-store"]
    env = {k: v for k, v in __import__("os").environ.items() if k != "TRANSFORMERS_VERBOSITY"}
    done = subprocess.run([*argv, "--output", str(tmp_path / "a")], capture_output=True,
                          text=True, env=env, check=True)
    assert "deprecated" not in done.stderr and "Warning" not in done.stderr, done.stderr
    # --debug shows third-party notices (test_third_party_deprecations_are_silenced_unless_debug);
    # transformers' `past_key_values` one is not there to show: the KV cache is passed as
    # `cache` where transformers takes it (backends/hf/kv_cache.py)
    debug = subprocess.run([*argv, "--output", str(tmp_path / "b"), "--debug"],
                           capture_output=True, text=True, env=env, check=True)
    assert "past_key_values" not in debug.stderr and "cache_params" not in debug.stderr
