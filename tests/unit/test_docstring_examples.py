"""Every runnable example in a public docstring runs and prints what it says (bytewax style)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted(
    ".".join(p.relative_to(ROOT).with_suffix("").parts)
    for package in ("streams", "acker", "service")
    for p in (ROOT / package).rglob("*.py")
    if ">>>" in p.read_text()
)


def test_there_are_examples() -> None:
    assert len(MODULES) >= 5, MODULES


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples_run(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
