"""ruff (lint, with pydocstyle's Google convention for the packages, and format) and mypy --strict are clean (pyproject.toml configures them)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_is_clean() -> None:
    ruff = shutil.which("ruff")
    assert ruff is not None, "ruff is in the dev extra: pip install -e '.[dev]'"
    got = run(ruff, "check", ".")
    assert got.returncode == 0, got.stdout + got.stderr


def test_ruff_format_is_clean() -> None:
    ruff = shutil.which("ruff")
    assert ruff is not None, "ruff is in the dev extra: pip install -e '.[dev]'"
    got = run(ruff, "format", "--check", ".")
    assert got.returncode == 0, "run `ruff format .`:\n" + got.stdout + got.stderr


def test_pre_commit_runs_the_same_checks() -> None:
    config = (ROOT / ".pre-commit-config.yaml").read_text()
    for hook in ("id: ruff", "id: ruff-format", "id: mypy"):
        assert hook in config, hook


def test_ruff_is_pinned_to_one_version_in_the_dev_extra_and_pre_commit() -> None:
    import re
    import tomllib

    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    pins = [d for d in dev if d.startswith("ruff")]
    rev = re.search(r"ruff-pre-commit\s+rev: v(\S+)", (ROOT / ".pre-commit-config.yaml").read_text())
    assert rev is not None
    assert pins == [f"ruff=={rev.group(1)}"], (pins, rev.group(1))


def test_mypy_strict_is_clean() -> None:
    got = run(sys.executable, "-m", "mypy")
    assert got.returncode == 0, got.stdout + got.stderr
    assert "Success" in got.stdout
