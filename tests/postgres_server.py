"""A real, throwaway PostgreSQL server for the results-store tests: ``initdb`` a new cluster in a
temporary folder, ``pg_ctl start`` it on 127.0.0.1 and a free port with password logins only,
and remove it after.

Debian's ``postgresql`` package provides the binaries (``.ci/run`` installs it). PostgreSQL
refuses to run as root, so as root the cluster belongs to the ``postgres`` user the package
creates, and the binaries run through ``runuser``. Tests that need the server are skipped when
the binaries are missing, unless ``LOCALEVAL_REQUIRE_POSTGRES`` is set (CI sets it).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

USER, PASSWORD, DATABASE = "localeval", "s3cret-Pw-4-tests", "results"


def _bin_dir() -> Path | None:
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(candidate) / "initdb").exists():
            return Path(candidate)
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """One cluster: ``url`` to reach it, ``stop``/``start`` to take it down and up again."""

    def __init__(self, bindir: Path):
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="localeval-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.owner = "postgres" if os.geteuid() == 0 else None
        self.url = f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{self.port}/{DATABASE}"

    def _as_owner(self, *argv: str, **kwargs) -> subprocess.CompletedProcess:
        command = [str(self.bindir / argv[0]), *argv[1:]]
        if self.owner:
            command = ["runuser", "-u", self.owner, "--", *command]
        return subprocess.run(command, check=True, capture_output=True, text=True, **kwargs)

    def init(self) -> None:
        if self.owner:
            entry = pwd.getpwnam(self.owner)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        pwfile = self.root / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if self.owner:
            os.chown(pwfile, pwd.getpwnam(self.owner).pw_uid, -1)
        self._as_owner("initdb", "-D", str(self.data), "-U", USER, "--pwfile", str(pwfile),
                       "--auth=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8")
        pwfile.unlink()

    def start(self) -> None:
        options = f"-h 127.0.0.1 -p {self.port} -k {self.root} -c fsync=off"
        self._as_owner("pg_ctl", "-D", str(self.data), "-o", options, "-l",
                       str(self.root / "log"), "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        self._as_owner("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def create_database(self) -> None:
        import psycopg

        admin = self.url.rsplit("/", 1)[0] + "/postgres"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")

    def remove(self) -> None:
        subprocess.run(["runuser", "-u", self.owner, "--", str(self.bindir / "pg_ctl"), "-D",
                        str(self.data), "-m", "immediate", "stop"] if self.owner else
                       [str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate",
                        "stop"], capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)


def running_postgres():
    """A running throwaway server with an empty ``results`` database, removed after (the body
    of a test module's fixture)."""
    bindir = _bin_dir()
    if bindir is None:
        if os.environ.get("LOCALEVAL_REQUIRE_POSTGRES"):
            pytest.fail("PostgreSQL's initdb is not installed (Debian package postgresql)")
        pytest.skip("PostgreSQL is not installed (Debian package postgresql)")
    server = PostgresServer(bindir)
    try:
        server.init()
        server.start()
        server.create_database()
        yield server
    finally:
        server.remove()
