"""``python -m tests`` (the CI lanes): every test file runs in exactly one lane, and the total reads pytest's closing line."""

from __future__ import annotations

import doctest
from pathlib import Path

import tests.__main__ as lanes

ROOT = Path(__file__).resolve().parents[2]


def lane_of(path: Path) -> list[str]:
    rel = path.relative_to(ROOT).as_posix()
    out = []
    for name, args in lanes.LANES.items():
        roots = [a for a in args if not a.startswith("--")]
        ignored = [a.removeprefix("--ignore=") for a in args if a.startswith("--ignore=")]
        if any(rel == r or rel.startswith(r.rstrip("/") + "/") for r in roots) and rel not in ignored:
            out.append(name)
    return out


def test_every_test_file_is_in_exactly_one_lane_and_static_runs_first() -> None:
    files = sorted((ROOT / "tests").rglob("test_*.py"))
    assert files
    assert {f.relative_to(ROOT).as_posix(): lane_of(f) for f in files if len(lane_of(f)) != 1} == {}
    assert next(iter(lanes.LANES)) == "static" and lanes.LANES["static"] == ["tests/unit/test_lint.py", "tests/unit/test_layers.py"]


def test_the_total_counts_pytest_s_closing_line_only() -> None:
    assert doctest.testmod(lanes).failed == 0
    assert lanes.counts("....\n2 failed, 10 passed, 1 error in 3.2s\n") == {"passed": 10, "failed": 3}
    assert lanes.counts("%3|FAIL| 10.0.0.1:1 failed: refused (after 0ms in state CONNECT)") == {"passed": 0, "failed": 0}
