"""Virtualenvs for peers whose dependencies Squall's environment does not carry (bytewax, Pathway).

Each peer gets ``~/.cache/squall/peers/<name>-<version>``, made once (under a file lock, so
two benches never build it at once) with ``--system-site-packages``: the peer's own pins are
installed in the venv and win over the system's, and what they leave alone (confluent-kafka,
Squall's own packages for the shared workload code) comes from the environment the bench runs
in. Raises PeerSetupError (one line) when pip cannot install the peer.

    >>> PEERS["bytewax"]
    ('bytewax==0.21.1',)
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

CACHE = Path(os.environ.get("SQUALL_DATA_DIR", Path.home() / ".cache" / "squall")) / "peers"

PEERS: dict[str, tuple[str, ...]] = {
    "bytewax": ("bytewax==0.21.1",),
    "pathway": ("pathway==0.33.0",),
}
"""Each peer's pip requirements (its version is the first one's)."""


class PeerSetupError(RuntimeError):
    """A peer's virtualenv could not be made."""


def version_of(peer: str) -> str:
    """The pinned version of ``peer`` (``bytewax`` -> ``0.21.1``)."""
    return PEERS[peer][0].split("==", 1)[1]


def peer_python(peer: str, cache: Path = CACHE) -> Path:
    """The Python of ``peer``'s virtualenv, made on first use (minutes for Pathway: about 1.6 GB)."""
    home = cache / f"{peer}-{version_of(peer)}"
    python = home / "bin" / "python"
    done = home / ".installed"
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f".{peer}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return python
        for cmd in ([sys.executable, "-m", "venv", "--system-site-packages", str(home)], [str(python), "-m", "pip", "install", "-q", *PEERS[peer]]):
            got = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
            if got.returncode != 0:
                last = next((ln for ln in reversed((got.stdout + got.stderr).splitlines()) if ln.strip()), "no output")
                raise PeerSetupError(f"[bench] cannot set up {peer} ({' '.join(PEERS[peer])}): {last.strip()[:300]}")
        done.write_text(version_of(peer))
    return python
