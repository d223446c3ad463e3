"""Shared bench helpers: a broker, worker processes, tables, JSON output, RSS."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.warmup import warm_broker
from service.brokers import ApacheKafka, EmbeddedBroker
from service.control import WorkerPlan

ROOT = Path(__file__).resolve().parent.parent


BROKERS = ("kafka", "tansu")
"""The brokers a benchmark runs on by default, in this order: a single-node Apache Kafka, the embedded broker."""


@contextmanager
def broker(bootstrap: str | None = None, kind: str = "tansu", warmup_s: float = 0.0) -> Iterator[str]:
    """``bootstrap`` if given, else a fresh broker of ``kind`` (``kafka`` or ``tansu``) for the run.

    A fresh Apache Kafka gets ``warmup_s`` seconds of neutral traffic first (:func:`bench.warmup.warm_broker`: its
    JIT compiles the request paths before anything is measured); an outside broker or the embedded one gets none.
    """
    if bootstrap:
        yield bootstrap
        return
    if kind == "kafka":
        with ApacheKafka(nodes=1) as k:
            if warmup_s > 0:
                print(f"[bench] warming Apache Kafka's JVM: {warmup_s:g} s of traffic before measuring", file=sys.stderr, flush=True)
                warm_broker(k.bootstrap, warmup_s)
            yield k.bootstrap
        return
    with EmbeddedBroker() as b:
        yield b.bootstrap


def spawn_worker(plan: WorkerPlan, workdir: Path, index: int = 0) -> subprocess.Popen[bytes]:
    """Start worker ``index`` of ``plan`` (written to ``workdir/plan.json``), logging to ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "plan.json"
    path.write_text(plan.to_json())
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = open(workdir / f"worker-{index}.log", "ab")  # noqa: SIM115
    return subprocess.Popen([sys.executable, "-m", "service.worker", str(path), str(index)], stdout=out, stderr=subprocess.STDOUT, env=env)


def proc_status_bytes(pid: int, field: str = "VmRSS") -> int:
    """A memory field of ``/proc/PID/status`` in bytes (``VmRSS`` now, ``VmHWM`` peak); 0 if gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def stop_process(proc: subprocess.Popen[bytes], timeout_s: float = 60.0) -> None:
    """SIGTERM ``proc`` (a ``squall serve`` drains), then SIGKILL if it has not exited within ``timeout_s`` seconds."""
    proc.terminate()
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def print_table(title: str, header: list[str], rows: list[list[Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title)
    for h in header:
        t.add_column(h, justify="right")
    for r in rows:
        t.add_row(*[fmt(v) for v in r])
    Console(width=200).print(t)


def fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1000 else f"{v:,.0f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def write_json(path: str | None, data: dict[str, Any]) -> None:
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(data, indent=2))


def wait_until(pred: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not pred():
        if time.monotonic() > deadline:
            raise TimeoutError(f"bench: {what} not reached in {timeout_s} s")
        time.sleep(0.05)
