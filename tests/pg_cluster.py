"""A throwaway PostgreSQL cluster for tests and benchmarks: the system's `initdb` and `pg_ctl`
(on PATH, or in /usr/lib/postgresql/*/bin), a temp directory, a free loopback port.

`initdb` refuses to run as root, so under root the cluster runs as an unprivileged user
(`nobody`, or a `trellis-pg` system user created for it). The superuser `trellis` has a password,
so the tests connect the way a deployment does: the password from an environment variable.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

REQUIRE_ENV = "TRELLIS_REQUIRE_POSTGRES"
"""Set (CI sets it): a missing PostgreSQL fails the run instead of skipping its tests."""
USER = "trellis"
PASSWORD = "trellis-test-password"
PASSWORD_ENV = "TRELLIS_TEST_PG_PASSWORD"
_SERVICE_USER = "trellis-pg"


class ClusterUnavailable(Exception):
    """No PostgreSQL server on this machine, or it would not start."""


def server_bin() -> Path | None:
    """The directory holding `initdb` and `pg_ctl`, newest major version first."""
    found = shutil.which("initdb")
    if found is not None:
        return Path(found).resolve().parent
    candidates = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
        reverse=True,
    )
    return candidates[0].parent if candidates else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _service_user() -> str | None:
    """Under root: the user the server runs as (None when not root)."""
    if os.geteuid() != 0:
        return None
    for name in ("nobody", _SERVICE_USER):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", _SERVICE_USER],
        check=True,
        capture_output=True,
    )
    return _SERVICE_USER


@dataclass(slots=True)
class Cluster:
    directory: Path
    port: int
    bin: Path
    user: str | None

    @property
    def url(self) -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/postgres"

    def _run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin / argv[0]), *argv[1:]]
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        return subprocess.run(command, capture_output=True, text=True, check=False)

    @classmethod
    def start(cls) -> Cluster:
        """initdb and start a cluster; `ClusterUnavailable` saying why it could not."""
        bin_dir = server_bin()
        if bin_dir is None:
            raise ClusterUnavailable("no initdb on PATH or in /usr/lib/postgresql/*/bin")
        user = _service_user()
        directory = Path(tempfile.mkdtemp(prefix="trellis-pg-"))
        if user is not None:
            entry = pwd.getpwnam(user)
            os.chown(directory, entry.pw_uid, entry.pw_gid)
        pwfile = directory / "pwfile"
        pwfile.write_text(PASSWORD + "\n", encoding="utf-8")
        if user is not None:
            os.chown(pwfile, entry.pw_uid, entry.pw_gid)
        cluster = cls(directory=directory, port=free_port(), bin=bin_dir, user=user)
        data = directory / "data"
        init = cluster._run(
            "initdb",
            "-D",
            str(data),
            "-U",
            USER,
            "--auth=scram-sha-256",
            f"--pwfile={pwfile}",
            "--encoding=UTF8",
            "--no-locale",
            "--no-sync",
        )
        if init.returncode != 0:
            cluster.remove()
            raise ClusterUnavailable(f"initdb failed: {init.stderr.strip()}")
        options = (
            f"-p {cluster.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' "
            "-c fsync=off -c full_page_writes=off -c max_connections=200"
        )
        started = cluster._run(
            "pg_ctl", "-D", str(data), "-l", str(directory / "log"), "-o", options, "-w", "start"
        )
        if started.returncode != 0:
            log = (directory / "log").read_text(errors="replace") if started.stdout else ""
            cluster.remove()
            raise ClusterUnavailable(f"pg_ctl start failed: {started.stderr.strip()} {log}")
        return cluster

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.directory / "data"), "-m", "immediate", "-w", "stop")
        self.remove()

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def required() -> bool:
    return bool(os.environ.get(REQUIRE_ENV))
