"""A throwaway PostgreSQL cluster for tests and benchmarks.

Starts ``initdb`` + ``pg_ctl`` from the Debian ``postgresql`` package in a temporary
directory, listening on a unix socket and 127.0.0.1, and removes it afterwards. PostgreSQL
refuses to run as root, so when the tests run as root (as CI does) the server runs as the
``postgres`` user if it exists, else ``nobody``.

Durability is switched off (``fsync=off``): this cluster exists for one test session.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PostgresCluster", "find_bindir", "running_cluster"]


def find_bindir() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``, or ``None``."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    which = shutil.which("pg_config")
    if which:
        out = subprocess.run([which, "--bindir"], capture_output=True, text=True, check=False)
        candidates.insert(0, out.stdout.strip())
    for candidate in candidates:
        if (
            candidate
            and (Path(candidate) / "initdb").exists()
            and (Path(candidate) / "pg_ctl").exists()
        ):
            return Path(candidate)
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class PostgresCluster:
    """A running cluster."""

    host: str
    port: int
    user: str
    bindir: Path
    run_as: list[str]

    def url(self, database: str = "postgres") -> str:
        """SQLAlchemy async URL of ``database``."""
        return f"postgresql+asyncpg://{self.user}@{self.host}:{self.port}/{database}"

    def psql(self, sql: str, database: str = "postgres") -> str:
        """Run SQL through ``psql`` as the cluster's superuser."""
        result = subprocess.run(
            [*self.run_as, str(self.bindir / "psql"), "-h", self.host, "-p", str(self.port),
             "-U", self.user, "-d", database, "-v", "ON_ERROR_STOP=1", "-Atc", sql],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        return result.stdout

    def create_database(self, name: str) -> str:
        """A new empty database; its URL."""
        self.psql(f'CREATE DATABASE "{name}"')
        return self.url(name)


def _unprivileged() -> tuple[list[str], int, int, str]:
    """(command prefix, uid, gid, user) to run the server as a non-root user."""
    if os.geteuid() != 0:
        user = pwd.getpwuid(os.geteuid()).pw_name
        return [], os.geteuid(), os.getegid(), user
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(name)
            prefix = [
                "setpriv",
                f"--reuid={entry.pw_uid}",
                f"--regid={entry.pw_gid}",
                "--clear-groups",
            ]
            return prefix, entry.pw_uid, entry.pw_gid, name
    raise RuntimeError("no unprivileged user to run PostgreSQL as")


@contextlib.contextmanager
def running_cluster() -> Iterator[PostgresCluster]:
    """Start a cluster; stop and delete it on exit."""
    bindir = find_bindir()
    if bindir is None:
        raise RuntimeError("PostgreSQL binaries (initdb, pg_ctl) not found")
    prefix, uid, gid, user = _unprivileged()
    root = Path(tempfile.mkdtemp(prefix="convstore-pg-"))
    os.chown(root, uid, gid)
    data, sockets = root / "data", root / "sock"
    sockets.mkdir()
    os.chown(sockets, uid, gid)
    env = {**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
    port = _free_port()
    try:
        subprocess.run(
            [*prefix, str(bindir / "initdb"), "-D", str(data), "-U", user, "-A", "trust",
             "-E", "UTF8", "--no-sync"],
            check=True, capture_output=True, env=env,
        )  # fmt: skip
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={sockets} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            "-c max_connections=200"
        )
        subprocess.run(
            [*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-w", "-t", "60",
             "-l", str(root / "server.log"), "start"],
            check=True, capture_output=True, env=env,
        )  # fmt: skip
        cluster = PostgresCluster("127.0.0.1", port, user, bindir, prefix)
        deadline = time.monotonic() + 30
        while True:
            try:
                cluster.psql("SELECT 1")
                break
            except subprocess.CalledProcessError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield cluster
    finally:
        subprocess.run(
            [*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
            capture_output=True, check=False, env=env,
        )  # fmt: skip
        shutil.rmtree(root, ignore_errors=True)
