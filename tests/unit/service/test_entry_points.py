"""The package entry points run as modules: ``python -m service.cli`` (what the tests and netns hosts call) and ``python -m service.worker``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_python_m_service_cli_is_the_squall_command() -> None:
    got = run("-m", "service.cli", "--help")
    assert got.returncode == 0, got.stderr
    assert "submit" in got.stdout and "serve" in got.stdout


def test_python_m_service_worker_without_a_plan_prints_one_line_and_exits_2() -> None:
    got = run("-m", "service.worker")
    assert got.returncode == 2
    assert got.stderr.strip() == "error: usage: python -m service.worker PLAN.json INDEX (squall run and squall serve start workers)"


def test_squall_broker_refuses_addresses_it_cannot_advertise_in_one_line_before_starting_anything() -> None:
    for args, said in (
        (["--listen", "0.0.0.0"], "error: [broker] --listen 0.0.0.0 binds every interface: give --advertise HOST"),
        (["--advertise", "10.1.0.5:9092"], "error: [broker] --advertise '10.1.0.5:9092' is not a host name or address (the port is --port"),
        (["--kafka", "--listen", "::"], "error: [broker] --listen :: binds every interface"),
        (["--listen", "0.0.0.0", "--advertise", "0.0.0.0"], "error: [broker] --advertise 0.0.0.0 is not an address a client can connect to"),
    ):
        got = run("-m", "service.cli", "broker", *args)
        assert got.returncode == 2 and got.stderr.startswith(said), (args, got.stderr)
        assert len(got.stderr.strip().splitlines()) == 1 and "Traceback" not in got.stderr
