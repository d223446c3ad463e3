"""A topology's dependencies, resolved once on the submitting machine into one bundle (``storm jar``'s uber jar; issue 51).

``squall submit FILE --requirements requirements.txt --package DIR --wheel FILE ...`` builds a
:class:`Bundle`: a tar of

* ``wheels/``: the wheels ``pip download`` resolved for the requirements (binary only, for this
  Python), and the wheels given with ``--wheel``;
* ``package/<name>/``: the ``--package`` directory (a package with the topology module in it),
  as it is, ``__pycache__`` aside;
* ``manifest.json``: the requirements' lines, each wheel's file name and sha256 (the lock), and
  the package's name.

Squall's own dependencies are pinned while resolving (``pip download -c``: the versions this
environment runs), so a requirement that conflicts with them is refused at submit with pip's
message, and every supervisor runs Squall's packages from its own environment. The tar is
reproducible (sorted, no times or owners): the same dependencies give the same sha256, and each
supervisor installs a bundle once (:mod:`service.deps.envs`).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from service.exceptions import DepsError

OWN_DISTRIBUTION = "squall"
PIP_TAIL_CHARS = 2000
"""How much of pip's output an error keeps (its end: where the resolver says why)."""


@dataclass(frozen=True)
class Bundle:
    """A topology's dependencies as one tar: its bytes, their sha256 (hex) and its manifest (see the module docstring)."""

    sha256: str
    data: bytes
    manifest: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        """What the control record says of it: ``{"sha256", "bytes", "requirements", "wheels", "package"}`` (``schemas/control.schema.json``)."""
        return {"sha256": self.sha256, "bytes": len(self.data), **self.manifest}


def own_pins(dist: str = OWN_DISTRIBUTION) -> list[str]:
    """``name==version`` of every distribution ``dist`` needs (its closure, extras aside), as installed here.

    The constraints a topology's requirements are resolved under: Squall's packages come from
    each supervisor's environment, so a requirement may not move them.
    """
    pins: dict[str, str] = {}
    todo = [dist]
    while todo:
        name = todo.pop()
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for raw in requires:
            req = Requirement(raw)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            key = canonicalize_name(req.name)
            if key in pins:
                continue
            try:
                pins[key] = importlib.metadata.version(req.name)
            except importlib.metadata.PackageNotFoundError:
                continue
            todo.append(req.name)
    return sorted(f"{n}=={v}" for n, v in pins.items())


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= PIP_TAIL_CHARS else "..." + text[-PIP_TAIL_CHARS:]


def download(requirements: Path, into: Path, pins: list[str], python: str = sys.executable) -> None:
    """``pip download`` the requirements' wheels (and their dependencies') into ``into``, under ``pins``.

    Raises DepsError naming the file with pip's own words when they cannot be resolved (a
    conflict with Squall's packages, a name PyPI does not have, no wheel for this Python).
    """
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(pins) + "\n")
        constraints = f.name
    try:
        got = subprocess.run(
            [
                python,
                "-m",
                "pip",
                "download",
                "--disable-pip-version-check",
                "--only-binary=:all:",
                "-r",
                str(requirements),
                "-c",
                constraints,
                "-d",
                str(into),
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        Path(constraints).unlink(missing_ok=True)
    if got.returncode != 0:
        at = got.stdout.find("The conflict is caused by")  # pip says which requirements clash on stdout, the verdict on stderr
        why = got.stderr.strip() + ("\n" + got.stdout[at:].strip() if at >= 0 else "")
        raise DepsError(f"[{requirements}] pip could not resolve these requirements with Squall's own packages pinned:\n{_tail(why or got.stdout)}")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _add_tree(tar: tarfile.TarFile, root: Path, arc: str) -> None:
    """Add ``root`` under ``arc``: files sorted, no times, owners or modes beyond 0o644/0o755 (reproducible)."""
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if "__pycache__" in rel.parts or ".git" in rel.parts or path.suffix == ".pyc":
            continue
        info = tarfile.TarInfo(f"{arc}/{rel.as_posix()}")
        info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
        if path.is_dir():
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        elif path.is_file():
            data = path.read_bytes()
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))


def build_bundle(requirements: Path | None = None, package: Path | None = None, wheels: tuple[Path, ...] = (), pins: list[str] | None = None) -> Bundle:
    """Resolve and pack a topology's dependencies (see the module docstring).

    Raises DepsError naming the file: a requirements file, package directory or wheel that is
    missing, or requirements pip cannot resolve under Squall's pins (``pins``; default
    :func:`own_pins`).
    """
    if requirements is not None and not requirements.is_file():
        raise DepsError(f"[{requirements}] --requirements: no such file")
    if package is not None and not (package.is_dir() and (package / "__init__.py").is_file()):
        raise DepsError(f"[{package}] --package must be a directory with an __init__.py (a package with the topology module in it)")
    for w in wheels:
        if not w.is_file() or w.suffix != ".whl":
            raise DepsError(f"[{w}] --wheel must name a .whl file")
    with tempfile.TemporaryDirectory(prefix="squall-bundle-") as tmp:
        stage = Path(tmp)
        (stage / "wheels").mkdir()
        lines: list[str] = []
        if requirements is not None:
            lines = [ln.strip() for ln in requirements.read_text().splitlines() if ln.strip() and not ln.strip().startswith("#")]
            download(requirements, stage / "wheels", own_pins() if pins is None else pins)
        for w in wheels:
            shutil.copy2(w, stage / "wheels" / w.name)
        locked = [{"file": p.name, "sha256": _sha256(p)} for p in sorted((stage / "wheels").glob("*.whl"))]
        manifest: dict[str, Any] = {"requirements": lines, "wheels": locked, "package": package.resolve().name if package is not None else None}
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
            blob = json.dumps(manifest, sort_keys=True, indent=1).encode()
            info = tarfile.TarInfo("manifest.json")
            info.size, info.mode = len(blob), 0o644
            tar.addfile(info, io.BytesIO(blob))
            _add_tree(tar, stage / "wheels", "wheels")
            if package is not None:
                _add_tree(tar, package.resolve(), f"package/{package.resolve().name}")
        data = out.getvalue()
    return Bundle(hashlib.sha256(data).hexdigest(), data, manifest)
