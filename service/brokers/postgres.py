"""A throw-away PostgreSQL server from the machine's binaries, for the tests and ``bench/``.

1. **Binaries**: ``pg_config --bindir``, else Debian's ``/usr/lib/postgresql/<version>/bin``.
2. **Cluster**: ``initdb`` into a fresh directory (trust authentication, user ``squall``), run as
   the ``postgres`` user when the caller is root, since PostgreSQL refuses root.
3. **Start**: ``pg_ctl start`` on a free port of 127.0.0.1, its socket in that directory.
4. **Stop**: ``pg_ctl stop -m immediate``; the directory is removed.

Example (needs PostgreSQL's server binaries; not run as a doctest)::

    with local_postgres() as url:
        print(url)  # postgresql://squall@127.0.0.1:PORT/postgres
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from service.brokers.embedded import free_port
from service.exceptions import ServerError


def postgres_bindir() -> Path | None:
    """The PostgreSQL server binaries (``pg_config --bindir``, else Debian's layout); None if absent."""
    if shutil.which("pg_config"):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True)
        if out.returncode == 0 and (Path(out.stdout.strip()) / "initdb").exists():
            return Path(out.stdout.strip())
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return found[-1].parent if found else None


@contextmanager
def local_postgres(fsync: bool = False) -> Iterator[str]:
    """Start a throw-away server and yield its URL (``postgresql://squall@127.0.0.1:PORT/postgres``).

    ``fsync``: PostgreSQL's ``fsync`` setting (off by default: tests need no durability; a
    benchmark of commit costs turns it on). Raises ServerError in one line when the server
    binaries are missing (``apt-get install postgresql``).
    """
    bindir = postgres_bindir()
    if bindir is None:
        raise ServerError("no PostgreSQL server binaries: apt-get install postgresql")
    home = Path(tempfile.mkdtemp(prefix="squall-pg-"))  # not under a root-only directory: the postgres user must reach it
    data = home / "data"
    port = free_port()
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(home, "postgres")
        home.chmod(0o700)
        as_user = ["runuser", "-u", "postgres", "--"]
    try:
        subprocess.run([*as_user, str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "squall"], check=True, capture_output=True)
        opts = f"-p {port} -k {home} -c listen_addresses=127.0.0.1 -c fsync={'on' if fsync else 'off'}"
        subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(home / "log"), "-w", "start"], check=True, capture_output=True)
        yield f"postgresql://squall@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(home, ignore_errors=True)
