"""Start-up stays light: the command line imports no heavy library (torch, transformers,
datasets, scikit-learn, scipy, matplotlib, pyarrow, httpx) until a command needs it, and a run
against an HTTP server never imports torch. (Times are measured in bench/startup.py, never
asserted here.)"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

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


def test_a_run_scores_its_questions_without_scipy():
    """The accuracy's Wilson interval is computed in the run (scipy.stats' import cost a
    one-question run 0.3-0.6 s); test_intervals.py checks it equals scipy's bit for bit."""
    code = ("from localeval.metrics.mcq import aggregate\n"
            "from localeval.records.samples import MCQSample\n"
            "aggregate([MCQSample(id=i, gold='A', subject='s', correct=True, pred='A')\n"
            "           for i in range(3)], {}, ())")
    assert "scipy" not in _imported(code)


def test_the_attention_layout_is_known_without_importing_transformers():
    """The hf backend's identity names its attention layout before any weights load: a look
    at the config (it imported transformers' modeling code: a second of start-up)."""
    code = ("from types import SimpleNamespace as C\n"
            "from localeval.backends.hf.attention import grouped\n"
            "assert grouped('eager', C(model_type='llama'))\n"
            "assert not grouped('sdpa', C(model_type='llama'))\n"
            "assert not grouped('eager', C(model_type='llama', auto_map={'x': 'y'}))\n"
            "assert not grouped('eager', C(model_type='gpt2'))")
    assert _imported(code) == []


def test_the_report_figures_draw_without_pyplot():
    """Figures are bare matplotlib Figures on an Agg canvas: pyplot (its backend machinery) is
    never imported by a run's report."""
    code = ("from localeval.render.figures import figure_panels, finish\n"
            "with figure_panels(1) as (fig, (ax,)):\n"
            "    ax.bar([0, 1], [40, 60])\n"
            "    ax.set_xticks([0, 1], ['一個很長的學科名稱' * 3, 'Social Science' * 3])\n"
            "    figure = finish(fig, 'n', 't', 'c', None)\n"
            "assert figure.svg.startswith('<svg')\n"
            "import sys\n"
            "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot imported'")
    assert "matplotlib" in _imported(code)


def test_the_command_as_a_process_freezes_the_heap_after_its_command(monkeypatch):
    """``console`` (the console script, ``python -m localeval.cli``) runs ``main`` and then
    freezes every object, so the interpreter's last collection skips them (1.4 s at exit of
    a one-question hf: run, bench/startup.py); ``main`` itself leaves the collector alone."""
    import gc

    import localeval.cli as cli
    from localeval.cli.process import console

    events = []
    monkeypatch.setattr(cli, "main", lambda: events.append("main") or 3)
    monkeypatch.setattr(gc, "freeze", lambda: events.append("freeze"))
    assert console() == 3
    assert events == ["main", "freeze"]
    out = subprocess.run([sys.executable, "-c", "import gc\nfrom localeval.cli import main\n"
                          "main(['tasks'])\nprint(gc.get_freeze_count())"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "0"


def test_figures_wait_for_their_imports_begun_while_the_model_runs(monkeypatch):
    """A run that writes its report imports matplotlib on a thread while the model runs; the
    first figure waits for that thread, however long it takes."""
    import threading

    import localeval.render.figures as figures

    order, release = [], threading.Event()

    def slow_import():
        release.wait(5)
        order.append("imported")

    monkeypatch.setattr(figures, "_import_drawing", slow_import)
    monkeypatch.setattr(figures, "_importing", [])
    figures.import_in_background()
    threading.Timer(0.2, release.set).start()
    with figures.figure_panels(1):
        order.append("drawing")
    assert order == ["imported", "drawing"]


# Libraries installed beside localeval that a one-question hf: run has no use for (issue 65
# item 3): the cluster's Ray, the HTTP backends' httpx, scikit-learn, the datasets library and
# its pandas/pyarrow, and pyplot (the report draws on a bare Agg Figure)
NOT_ON_THE_HF_PATH = ("ray", "httpx", "sklearn", "datasets", "pandas", "pyarrow",
                      "matplotlib.pyplot")


@pytest.mark.slow
def test_a_one_question_hf_run_imports_nothing_it_does_not_use(tiny_llama, cmmlu, tmp_path):
    """The whole command, as bench/startup.py times it (report written), in its own process:
    the modules it imported, read at exit. Each of NOT_ON_THE_HF_PATH is installed here, so a
    module-level import of one on the run's path fails this."""
    import importlib.util

    assert all(importlib.util.find_spec(m.split(".")[0]) for m in NOT_ON_THE_HF_PATH)
    args = ["run", "--task", "cmmlu", "--data", cmmlu, "--subjects", "sociology", "--limit",
            "1", "--model", f"hf:{tiny_llama}", "--shots", "5", "--method", "likelihood",
            "--dtype", "float32", "--device", "cpu", "--no-cache", "--no-store", "--quiet",
            "--output", str(tmp_path / "run")]
    code = ("import atexit, json, sys\n"
            f"atexit.register(lambda: print('MODULES', json.dumps(sorted(m for m in "
            f"{NOT_ON_THE_HF_PATH!r} if m in sys.modules))))\n"
            "from localeval.cli import main\n"
            f"sys.exit(main({args!r}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "run" / "report.html").exists()  # the whole path ran, report included
    line = [x for x in done.stdout.splitlines() if x.startswith("MODULES ")][-1]
    assert json.loads(line.removeprefix("MODULES ")) == []
