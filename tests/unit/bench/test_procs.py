"""The bench's process-tree view (bench/procs.py) reads /proc and starts no process of its own."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench import procs
from bench.common import proc_status_bytes
from bench.procs import children, descendants


def _comms(pids: list[int]) -> list[str]:
    out = []
    for q in pids:
        with contextlib.suppress(OSError):
            out.append(Path(f"/proc/{q}/comm").read_text().strip())
    return sorted(out)


@pytest.fixture
def tree() -> Iterator[subprocess.Popen[bytes]]:
    """A shell with two children: a sleep, and a shell with a sleep of its own."""
    p = subprocess.Popen(["bash", "-c", "sleep 30 & bash -c 'sleep 30 & wait' & wait"])
    deadline = time.monotonic() + 10
    while _comms(descendants(p.pid)) != ["bash", "sleep", "sleep"] and time.monotonic() < deadline:
        time.sleep(0.02)  # a forked child reads "bash" until it has exec'd its sleep (CI saw that once)
    yield p
    for q in [*descendants(p.pid), p.pid]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(q, 9)
    p.wait()


def test_children_and_descendants_are_read_from_proc(tree: subprocess.Popen[bytes]) -> None:
    kids = children(tree.pid)
    assert len(kids) == 2
    below = descendants(tree.pid)
    assert len(below) == 3  # the sleep, the inner bash, and its sleep
    assert set(kids) <= set(below)
    assert tree.pid in descendants(os.getpid())
    comms = sorted(Path(f"/proc/{q}/comm").read_text().strip() for q in below)
    assert comms == ["bash", "sleep", "sleep"]


def test_a_sample_forks_nothing(tree: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    """A pgrep per worker every 0.1 s took CPU from the contender being measured."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("bench.procs started a process")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    assert len(descendants(tree.pid)) == 3
    assert procs.tree_cpu_seconds(tree.pid) >= 0.0


def test_a_process_gone_has_no_children() -> None:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    assert children(p.pid) == []
    assert descendants(p.pid) == []


def test_pss_counts_a_shared_page_once_across_the_processes_that_share_it() -> None:
    """Summed RSS counts 64 MiB that a parent and its forked child share twice; summed PSS once."""
    code = (
        "import os, sys, time\n"
        "buf = bytearray(64 << 20)\n"
        "for i in range(0, len(buf), 4096): buf[i] = 1\n"  # touch every page before the fork
        "child = os.fork()\n"
        "if child == 0:\n"
        "    time.sleep(30); os._exit(0)\n"
        "print(child, flush=True); time.sleep(30)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    child = 0
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        pair = [parent.pid, child]
        rss = sum(proc_status_bytes(p, "VmRSS") for p in pair)
        pss = sum(procs.pss(p) for p in pair)
        assert rss - pss > 48 << 20  # the shared 64 MiB counted once, not twice
        assert pss > 64 << 20
    finally:
        if child:
            with contextlib.suppress(OSError):
                os.kill(child, 9)
        parent.kill()
        parent.wait()
    assert procs.pss(parent.pid) == 0  # gone: 0, as rss_hwm
