"""Dependency bundles (service.deps), no broker: packed reproducibly, kept in chunks, installed offline into a
virtualenv the workers run, swept once unused; a failed install is said in ``squall status``."""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import io
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.deps.bundle import build_bundle, own_pins
from service.deps.envs import importable, prepare, sweep
from service.deps.store import chunks_of, join_chunks
from service.exceptions import DepsError
from service.query.views import status_lines
from tests.unit.service.status_dicts import bare_status


def make_wheel(where: Path, name: str, version: str, module_text: str) -> Path:
    """A pure-Python wheel of one module, as ``pip wheel`` would make it (METADATA, WHEEL, RECORD with hashes)."""
    files = {
        f"{name}/__init__.py": module_text.encode(),
        f"{name}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{name}-{version}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: squall-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{name}-{version}.dist-info/RECORD,,")
    files[f"{name}-{version}.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = where / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
    return wheel


def make_package(where: Path, name: str) -> Path:
    pkg = where / name
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text("def shout(word):\n    return word.upper() + '!'\n")
    (pkg / "topology.py").write_text("from helpers import shout\n")
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "helpers.cpython-311.pyc").write_bytes(b"stale")
    return pkg


def test_a_bundle_is_reproducible_installs_offline_and_its_workers_import_from_it(tmp_path: Path) -> None:
    """The same inputs give the same sha256 (a supervisor installs a bundle once); the env's
    interpreter imports the shipped wheel and package and still Squall's own packages; the
    supervisor's process imports them only inside ``importable``; ``sweep`` removes unused envs."""
    wheel = make_wheel(tmp_path, "tinydep", "1.0", "VALUE = 42\n")
    pkg = make_package(tmp_path / "src", "shapes_pkg")
    one = build_bundle(package=pkg, wheels=(wheel,), pins=[])
    again = build_bundle(package=pkg, wheels=(wheel,), pins=[])
    assert one.sha256 == again.sha256 and one.data == again.data
    assert one.describe()["wheels"] == [{"file": wheel.name, "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest()}]
    assert one.describe()["package"] == "shapes_pkg" and one.describe()["bytes"] == len(one.data)
    with tarfile.open(fileobj=io.BytesIO(one.data)) as tar:
        names = tar.getnames()
    assert "package/shapes_pkg/helpers.py" in names and not any("__pycache__" in n for n in names)

    env = prepare(one.data, one.sha256, tmp_path / "envs", "deps")
    assert prepare(b"", one.sha256, tmp_path / "envs", "deps") == env  # ready: the bytes are not read again
    code = "import tinydep, helpers, shapes_pkg.helpers, orjson; print(tinydep.VALUE, helpers.shout('to'))"
    got = subprocess.run([env.python, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": ":".join(env.paths)}, timeout=60)
    assert got.returncode == 0 and got.stdout.split() == ["42", "TO!"], got.stderr
    assert "tinydep" not in sys.modules
    with importable(env):
        import tinydep

        assert tinydep.VALUE == 42
    assert env.site_packages not in sys.path
    sys.modules.pop("tinydep", None)
    assert sweep(tmp_path / "envs", {env.sha256}) == [] and sweep(tmp_path / "envs", set()) == [env.sha256]
    assert not env.root.exists()


def test_a_bundle_whose_bytes_do_not_match_or_that_escapes_its_directory_is_refused(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, "tinydep", "1.0", "")
    b = build_bundle(wheels=(wheel,), pins=[])
    with pytest.raises(DepsError, match=r"^\[wc\] dependency bundle [0-9a-f]{12}: its bytes do not match"):
        prepare(b.data + b"x", b.sha256, tmp_path / "envs", "wc")
    evil = io.BytesIO()
    with tarfile.open(fileobj=evil, mode="w") as tar:
        info = tarfile.TarInfo("../outside.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    data = evil.getvalue()
    with pytest.raises(DepsError, match="not a plain file inside the bundle"):
        prepare(data, hashlib.sha256(data).hexdigest(), tmp_path / "envs", "wc")
    assert not (tmp_path / "outside.txt").exists() and not any(p.is_dir() for p in (tmp_path / "envs").iterdir())


def test_a_wheel_that_does_not_install_is_said_with_pips_words_and_leaves_nothing(tmp_path: Path) -> None:
    broken = tmp_path / "broken-1.0-py3-none-any.whl"
    broken.write_bytes(b"not a zip")
    b = build_bundle(wheels=(broken,), pins=[])
    with pytest.raises(DepsError, match=r"(?s)^\[wc\] dependency bundle [0-9a-f]{12} did not install \(pip, offline\):\n.+"):
        prepare(b.data, b.sha256, tmp_path / "envs", "wc")
    assert not any(p.is_dir() for p in (tmp_path / "envs").iterdir())  # the lock file aside


def test_bad_arguments_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(DepsError, match=r"--requirements: no such file"):
        build_bundle(requirements=tmp_path / "missing.txt")
    (tmp_path / "notpkg").mkdir()
    with pytest.raises(DepsError, match=r"--package must be a directory with an __init__.py"):
        build_bundle(package=tmp_path / "notpkg")
    with pytest.raises(DepsError, match=r"--wheel must name a .whl file"):
        build_bundle(wheels=(tmp_path / "x.tar.gz",))


def test_squalls_own_packages_are_pinned_at_the_versions_installed() -> None:
    pins = own_pins()
    assert f"orjson=={importlib.metadata.version('orjson')}" in pins
    assert any(p.startswith("pydantic-core==") for p in pins)  # transitively, through pydantic
    assert not any(p.startswith("quixstreams==") for p in pins)  # an extra's, not Squall's own


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=3000), st.integers(1, 700), st.randoms(use_true_random=False), st.booleans())
def test_a_bundle_comes_back_from_its_chunks_in_any_order_and_only_whole(data: bytes, size: int, rnd: object, lose_one: bool) -> None:
    sha = hashlib.sha256(data).hexdigest()
    parts = chunks_of(data, size)
    records: list[tuple[bytes | None, bytes | None]] = [(f"{sha}/{i}".encode(), p) for i, p in enumerate(parts)]
    records += [(b"other/0", b"noise"), (None, b"x")]
    rnd.shuffle(records)  # type: ignore[attr-defined]
    head = (sha.encode(), f'{{"sha256": "{sha}", "bytes": {len(data)}, "chunks": {len(parts)}}}'.encode())
    assert join_chunks(records, sha) is None  # no head yet: not whole
    if lose_one:
        records = [r for r in records if r[0] != f"{sha}/0".encode()]
        with pytest.raises(DepsError, match="chunks missing"):
            join_chunks([*records, head], sha)
    else:
        assert join_chunks([*records, head], sha) == data


WHY = "[wc] dependency bundle 0123456789ab did not install (pip, offline):\nERROR: x"


def test_a_failed_install_is_said_in_status() -> None:
    st_ = bare_status(
        errors=[
            {
                "event": "failed_install",
                "supervisor": "s1",
                "worker": -1,
                "reason": "[wc] dependency bundle 0123456789ab did not install (pip, offline):\nERROR: x",
            }
        ]
    )
    lines = status_lines(st_)
    assert f"supervisor s1 cannot run it: {WHY}" in lines
