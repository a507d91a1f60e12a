"""llama.cpp's own server (from llama-cpp-python) on a seeded tiny HF Llama, for the tests.

The HF folder becomes GGUF with ``convert_hf_to_gguf.py`` from llama-cpp-python's source
distribution (the pip-installed wheel does not ship it): the sdist of the installed version is
fetched once with pip (from the package index, like every test dependency) into
``~/.cache/localeval/`` (or ``$LOCALEVAL_CACHE``) and only the converter, its ``conversion/``
package and ``gguf-py/`` are kept. The server listens on 127.0.0.1 and is stopped after.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

import httpx
from cache_lock import cache_lock

KEEP = ("convert_hf_to_gguf.py", "conversion/", "gguf-py/")


def converter_sources() -> Path:
    """The folder holding convert_hf_to_gguf.py of the installed llama-cpp-python."""
    release = version("llama_cpp_python")
    home = Path(os.environ.get("LOCALEVAL_CACHE", Path.home() / ".cache" / "localeval"))
    folder = home / f"llama-cpp-python-{release}"
    if (folder / "convert_hf_to_gguf.py").exists():
        return folder
    with cache_lock(home, folder.name):  # one download; another process waits, then uses it
        if not (folder / "convert_hf_to_gguf.py").exists():
            _fetch_converter(release, folder)
    return folder


def _fetch_converter(release: str, folder: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                        "--no-binary", ":all:", f"llama-cpp-python=={release}", "-d", tmp],
                       check=True)
        (sdist,) = Path(tmp).glob("llama_cpp_python-*.tar.gz")
        prefix = f"llama_cpp_python-{release}/vendor/llama.cpp/"
        partial = folder.with_suffix(".partial")
        with tarfile.open(sdist) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith(prefix)
                       and m.name[len(prefix):].startswith(KEEP)]
            for m in members:
                m.name = m.name[len(prefix):]
            tar.extractall(partial, members=members, filter="data")
        partial.rename(folder)  # whole or not at all


def to_gguf(model: Path, out: Path) -> Path:
    """``model`` (an HF folder) as float32 GGUF: the same numbers as the HF weights."""
    if out.exists():
        return out
    sources = converter_sources()
    env = {**os.environ, "PYTHONPATH": str(sources / "gguf-py")}
    subprocess.run([sys.executable, str(sources / "convert_hf_to_gguf.py"), str(model),
                    "--outfile", str(out), "--outtype", "f32"], check=True, env=env,
                   capture_output=True)
    return out


class LlamaCppServer:
    """``python -m llama_cpp.server`` serving ``gguf`` as ``alias`` on a free loopback port."""

    def __init__(self, gguf: Path, alias: str = "tiny", n_ctx: int = 4096):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/v1"
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias",
             alias, "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx),
             "--logits_all", "true", "--seed", "0"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.log.seek(0)
                raise RuntimeError(f"llama.cpp server exited: {self.log.read()[-2000:]!r}")
            try:
                if httpx.get(self.url + "/models", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError("llama.cpp server did not start in 120 s")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
