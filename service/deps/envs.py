"""A topology's dependencies installed on a supervisor: one virtualenv per bundle, offline, cached by sha256 (issue 51).

:func:`prepare` turns a :class:`~service.deps.bundle.Bundle`'s bytes into an :class:`Env` under
``<data dir>/envs/<sha256[:16]>/``:

1. check the bytes against the sha256 the control record names;
2. unpack the tar (``wheels/``, ``package/``, ``manifest.json``), refusing any path that would
   leave the directory;
3. create a virtualenv that sees the supervisor's own site-packages (``--system-site-packages``:
   Squall and its dependencies come from there, the same on every supervisor);
4. install the requirements and the wheels into it from the bundle's wheels alone
   (``pip --python ENV install --no-index --find-links wheels``, ``PIP_NO_INDEX=1``: no network);
5. mark it ready; a later call returns it at once.

A failed step removes the directory and raises :class:`DepsError` with pip's output. Workers
run the env's interpreter with the package directory on their path (:attr:`Env.paths`);
:func:`importable` gives the supervisor's own process (which loads the topology to plan it)
the same imports for a while. :func:`sweep` removes the envs no plan uses any more.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import venv
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from service.deps.bundle import PIP_TAIL_CHARS
from service.exceptions import DepsError

READY = ".ready"


@dataclass(frozen=True)
class Env:
    """An installed bundle: its directory, the interpreter workers run, its site-packages and the package paths (``sys.path`` entries)."""

    root: Path
    python: str
    site_packages: str
    paths: tuple[str, ...]

    @property
    def sha256(self) -> str:
        """The first 16 hex digits of the bundle's sha256 (the directory's name)."""
        return self.root.name


def _env_of(root: Path) -> Env:
    venv_dir = root / "venv"
    python = str(venv_dir / "bin" / "python")
    purelib = sysconfig.get_path("purelib", vars={"base": str(venv_dir), "platbase": str(venv_dir)})
    paths: list[str] = []
    manifest = json.loads((root / "bundle" / "manifest.json").read_text())
    if manifest.get("package"):
        package_root = root / "bundle" / "package"
        paths = [str(package_root), str(package_root / manifest["package"])]
    return Env(root, python, purelib, tuple(paths))


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= PIP_TAIL_CHARS else "..." + text[-PIP_TAIL_CHARS:]


def _unpack(data: bytes, into: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        for member in tar.getmembers():
            target = (into / member.name).resolve()
            if not (target == into.resolve() or into.resolve() in target.parents) or not (member.isfile() or member.isdir()):
                raise DepsError(f"bundle member {member.name!r} is not a plain file inside the bundle")
        tar.extractall(into, filter="data")


def prepare(data: bytes, sha256: str, envs_dir: Path, topology: str = "?") -> Env:
    """The ready env of the bundle ``data`` (see the module docstring); ``topology`` names errors.

    Raises DepsError naming the topology and the bundle: bytes that do not match ``sha256``, a
    malformed tar, or an install that failed (with pip's output).
    """
    root = envs_dir / sha256[:16]
    if (root / READY).exists():
        return _env_of(root)
    envs_dir.mkdir(parents=True, exist_ok=True)
    with open(envs_dir / f"{sha256[:16]}.lock", "w") as lock:  # one install at a time, across threads and processes
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (root / READY).exists():  # another installed it while this one waited
            return _env_of(root)
        return _install(data, sha256, root, topology)


def ready(envs_dir: Path, sha256: str) -> Env | None:
    """The env of bundle ``sha256`` if it is installed under ``envs_dir``, else None."""
    root = envs_dir / sha256[:16]
    return _env_of(root) if (root / READY).exists() else None


def _install(data: bytes, sha256: str, root: Path, topology: str) -> Env:
    """Steps 1-5 of :func:`prepare`, under its lock."""
    # 1. The bytes are the bundle the record names.
    if hashlib.sha256(data).hexdigest() != sha256:
        raise DepsError(f"[{topology}] dependency bundle {sha256[:12]}: its bytes do not match its sha256")
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    try:
        # 2. Unpack.
        _unpack(data, root / "bundle")
        manifest = json.loads((root / "bundle" / "manifest.json").read_text())
        # 3. A virtualenv over the supervisor's own packages.
        venv.EnvBuilder(system_site_packages=True, with_pip=False, symlinks=True).create(root / "venv")
        env = _env_of(root)
        # 4. Offline install from the bundle's wheels.
        wheels = root / "bundle" / "wheels"
        given = [str(wheels / w["file"]) for w in manifest.get("wheels", [])]
        reqs = list(manifest.get("requirements", []))
        if reqs or given:
            # --isolated: no pip config file or PIP_* variable of this machine adds an index or links: the bundle's wheels only
            cmd = [
                sys.executable,
                "-m",
                "pip",
                "--isolated",
                "--python",
                env.python,
                "install",
                "-q",
                "--disable-pip-version-check",
                "--no-index",
                "--find-links",
                str(wheels),
            ]
            got = subprocess.run([*cmd, *reqs, *given], capture_output=True, text=True, timeout=600, env={**os.environ, "PIP_NO_INDEX": "1"})
            if got.returncode != 0:
                raise DepsError(f"[{topology}] dependency bundle {sha256[:12]} did not install (pip, offline):\n{_tail(got.stderr or got.stdout)}")
    except DepsError:
        shutil.rmtree(root, ignore_errors=True)
        raise
    except (OSError, ValueError, tarfile.TarError, subprocess.SubprocessError) as exc:
        shutil.rmtree(root, ignore_errors=True)
        raise DepsError(f"[{topology}] dependency bundle {sha256[:12]} did not install: {type(exc).__name__}: {exc}") from exc
    # 5. Ready.
    (root / READY).write_text(sha256)
    return env


@contextmanager
def importable(env: Env | None) -> Iterator[None]:
    """While inside, this process imports from ``env`` too (its site-packages and package paths first); a no-op for None.

    The supervisor loads a topology to plan it. Modules it imported stay imported: two
    topologies that ship different versions of one library plan with the first one loaded
    (their workers, separate processes, each run their own).
    """
    if env is None:
        yield
        return
    added = [p for p in (*env.paths, env.site_packages) if p not in sys.path]
    sys.path[:0] = added
    try:
        yield
    finally:
        for p in added:
            if p in sys.path:
                sys.path.remove(p)


def sweep(envs_dir: Path, keep: set[str]) -> list[str]:
    """Remove every env whose sha256 prefix is not in ``keep`` (16 hex digits each); returns what was removed."""
    if not envs_dir.is_dir():
        return []
    gone = []
    for d in sorted(envs_dir.iterdir()):
        if d.is_dir() and d.name not in keep:
            shutil.rmtree(d, ignore_errors=True)
            (envs_dir / f"{d.name}.lock").unlink(missing_ok=True)
            gone.append(d.name)
    return gone
