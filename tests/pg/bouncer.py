"""A PgBouncer (Debian's `pgbouncer`) in front of the test database, in a given pool mode.

It listens on a free port of 127.0.0.1 and forwards every database to the test server, with
the test roles' passwords (from their DSNs) in its auth file; `dsn(of)` is a DSN through it.
It refuses to run as root, so as root it runs as `postgres` (its directory handed over).
Without the binary the tests that need it skip, saying how to install it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

import pytest

HOW = "PgBouncer is not installed (Debian: apt-get install pgbouncer; ./run-tests does as root)"


def binary() -> str:
    found = shutil.which("pgbouncer") or (
        "/usr/sbin/pgbouncer" if os.access("/usr/sbin/pgbouncer", os.X_OK) else None
    )
    if found is None:
        pytest.skip(HOW)
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Bouncer:
    """One PgBouncer process, stopped by `close`."""

    def __init__(self, mode: str, *dsns: str) -> None:
        target = urlsplit(dsns[0])
        self.port = _free_port()
        # Under /tmp itself: as root it runs as postgres, which must reach its files.
        directory = self.directory = Path(tempfile.mkdtemp(prefix="agent-assist-pgbouncer-"))
        users = "".join(
            f'"{unquote(urlsplit(d).username or "")}" "{unquote(urlsplit(d).password or "")}"\n'
            for d in dsns
        )
        (directory / "users.txt").write_text(users)
        ini = directory / "pgbouncer.ini"
        ini.write_text(
            "[databases]\n"
            f"* = host={target.hostname or '127.0.0.1'} port={target.port or 5432}\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {self.port}\nunix_socket_dir =\n"
            f"auth_type = scram-sha-256\nauth_file = {directory / 'users.txt'}\n"
            f"pool_mode = {mode}\ndefault_pool_size = 4\n"
            f"logfile = {directory / 'pgbouncer.log'}\n"
            "ignore_startup_parameters = extra_float_digits,options\n"
        )
        command = [binary(), str(ini)]
        if os.getuid() == 0:
            subprocess.run(["chown", "-R", "postgres", str(directory)], check=True)
            command[1:1] = ["-u", "postgres"]
        self._process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.log = directory / "pgbouncer.log"
        deadline = time.monotonic() + 10
        while True:  # until it accepts connections (or has died saying why)
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self._process.poll() is not None or time.monotonic() > deadline:
                    _out, err = self._process.communicate()
                    raise RuntimeError(f"pgbouncer did not start: {err.decode()}") from None
                time.sleep(0.05)

    def dsn(self, of: str) -> str:
        """Return `of` (a DSN of the test server) through this PgBouncer."""
        parts = urlsplit(of)
        credentials = parts.netloc.rsplit("@", 1)[0]
        return urlunsplit(parts._replace(netloc=f"{credentials}@127.0.0.1:{self.port}"))

    def close(self) -> None:
        self._process.terminate()
        self._process.wait(timeout=10)
        shutil.rmtree(self.directory, ignore_errors=True)
