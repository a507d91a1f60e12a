"""`localeval --help` builds its parser from light modules (issue 39: `--help` in 0.3 s): each
task kind's Options, the metric and format choice names, the registry's kinds. Building the
parser, printing a command's help and listing the tasks import none of numpy, pydantic, torch, transformers,
httpx, matplotlib (numpy and pydantic alone were 0.2 s of the 0.4 s). No time is asserted;
bench/startup.py measures it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from localeval.tasks import registry

HEAVY = ("numpy", "pydantic", "torch", "transformers", "httpx", "matplotlib", "ray")


def _loaded(argv: list[str]) -> set[str]:
    """The top-level packages `python -X importtime -m localeval.cli ARGV` imported."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "localeval.cli", *argv],
                          capture_output=True, text=True, env=None)
    assert done.returncode == 0, done.stderr[-2000:]
    assert ("usage: localeval" in done.stdout) == ("--help" in argv)
    lines = [line.split("|")[-1] for line in done.stderr.splitlines()
             if line.startswith("import time:")]
    return {line.strip().split(".")[0] for line in lines}


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["rescore", "--help"], ["merge", "--help"],
                                  ["contamination", "--help"], ["tasks", "--help"],
                                  ["export", "--help"], ["tasks"], ["guards"],
                                  ["guards", "--json"]])
def test_help_imports_no_heavy_library(argv):
    loaded = _loaded(argv)
    assert "localeval" in loaded  # the probe sees our imports at all
    assert sorted(loaded & set(HEAVY)) == []


def test_building_the_parser_imports_no_heavy_library():
    probe = ("import sys\nfrom localeval.cli import parser\nparser()\n"
             f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_each_kind_in_the_registry_is_its_class():
    """The registry names a kind by its Options and command without importing its class:
    they must be the class's own."""
    kinds = [k for k in registry.kinds() if isinstance(k, registry.TaskKind)]
    assert len(kinds) == 4
    for kind in kinds:
        assert kind.cls.Options is kind.Options
        assert kind.cls.command == kind.command
    assert registry.task_kinds() == [k.cls for k in kinds]


def test_the_choice_names_are_the_keys_of_their_values():
    from localeval.analysis import choices as analysis_choices
    from localeval.analysis import gaps, llm_safety, safety
    from localeval.metrics import choices, classification
    from localeval.render.format_names import FORMATS
    from localeval.render.formats import RENDER, SUFFIX

    assert tuple(classification.THRESHOLD_GRIDS) == choices.THRESHOLD_GRID_NAMES
    assert tuple(classification.AUPRC_METRICS) == choices.AUPRC_NAMES
    assert choices.PAPER_THRESHOLD_GRID in choices.THRESHOLD_GRID_NAMES
    assert choices.PAPER_THRESHOLD_RULE in choices.THRESHOLD_RULES
    assert choices.PAPER_AUPRC in choices.AUPRC_NAMES
    assert tuple(RENDER) == FORMATS == tuple(SUFFIX)
    # the analyses use the names the options offer (one declaration each)
    assert gaps.EN_CELLS is analysis_choices.EN_CELLS
    assert safety.N_RESAMPLES == analysis_choices.N_RESAMPLES
    assert llm_safety.D2_CHOICES is analysis_choices.D2_CHOICES


def test_the_options_keep_their_import_paths():
    from localeval.tasks.contamination import ContaminationOptions, ContaminationTask
    from localeval.tasks.llm_safety import LLMSafetyOptions, LLMSafetyTask

    assert LLMSafetyTask.Options is LLMSafetyOptions
    assert ContaminationTask.Options is ContaminationOptions


def test_listing_the_guards_imports_no_guard():
    """Issue 68: `localeval guards` reads each guard's family and options from its module's
    source text: no guard module is imported (a guard's module may import torch, numpy, an
    API client), and the families and options are those of the classes themselves."""
    import json

    from localeval.guards.registry import GUARDS, UPSTREAM, guard_table
    from localeval.guards.staged import StagedGuard
    from localeval.options import option_fields

    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "localeval.cli", "guards",
                           "--json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:")}
    modules = {target.split(":")[0] for target in GUARDS.values()}
    assert sorted(modules & imported) == [] and "localeval.guards.catalog" in imported
    rows = {r["guard"]: r for r in json.loads(done.stdout)}
    assert list(rows) == list(guard_table())  # the families, then the fine-tunes (issue 72)
    assert set(UPSTREAM) <= set(rows) and set(GUARDS) <= set(rows)
    for name, row in rows.items():  # each as the class itself says, now imported here
        cls = guard_table()[name].load()
        family = "language model" if issubclass(cls, StagedGuard) else \
            "moderation API" if "moderation" in cls.__module__ else "classifier"
        assert row["family"] == family, name
        declared = sorted(f.name for f in option_fields(cls.Options))  # issue 67
        assert sorted(o.split("=")[0] for o in row["options"]) == declared, name
        assert row["from"] == UPSTREAM.get(name, "localeval (its own wording)")
