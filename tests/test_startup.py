"""Start-up stays light: the command line imports no heavy library (torch, transformers,
datasets, scikit-learn, scipy, matplotlib, pyarrow, httpx) until a command needs it, and a run
against an HTTP server never imports torch. (Times are measured in bench/startup.py, never
asserted here.)"""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("torch", "transformers", "datasets", "sklearn", "scipy", "matplotlib", "pyarrow",
         "httpx")


def _imported(code: str) -> list[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in {HEAVY!r} " \
            "if m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_the_command_line_imports_nothing_heavy():
    assert _imported("import localeval.cli") == []
    assert _imported("from localeval.cli import main\n"
                     "import contextlib, io\n"
                     "with contextlib.redirect_stdout(io.StringIO()), "
                     "contextlib.suppress(SystemExit):\n"
                     "    main(['--help'])") == []


def test_an_http_run_never_imports_torch(shared, tmp_path):
    code = ("from localeval.cli import main\n"
            f"main(['run', '--task', 'cmmlu', '--data', {str(shared / 'data' / 'cmmlu')!r}, "
            "'--subjects', 'agronomy', '--limit', '2', '--model', 'openai:x', '--base-url', "
            f"'http://127.0.0.1:9/v1', '--no-cache', '--output', {str(tmp_path / 'r')!r}])")
    heavy = _imported(code)  # the run fails (no server there) after loading its data
    assert "torch" not in heavy and "transformers" not in heavy and "datasets" not in heavy
