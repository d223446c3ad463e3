"""The kit's pytest plugin: ``-p streams.testing`` gives a user's tests the ``squall_kit`` and ``squall_time`` fixtures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def pytest_run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_the_examples_tests_pass_with_the_plugin_and_need_it() -> None:
    with_plugin = pytest_run("-p", "streams.testing", "examples/test_examples.py")
    assert with_plugin.returncode == 0, with_plugin.stdout
    assert "9 passed" in with_plugin.stdout
    without = pytest_run("examples/test_examples.py::test_wordcount_counts_every_word")
    assert without.returncode == 1 and "fixture 'squall_kit' not found" in without.stdout
