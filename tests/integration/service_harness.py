"""Drive ``squall serve`` and the CLI as real processes, as a user would.

Each test gets a fresh control namespace (its own control, slots and events topics and
supervisor group) and fresh topology names, on the session's broker.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from confluent_kafka import TopicPartition

from service.brokers.admin import read_topic
from streams.kafka.clients import committed_offsets, new_consumer
from streams.monitoring.board import LEDGER_TOTALS, StatsBoard

ROOT = Path(__file__).resolve().parents[2]
WORDCOUNT = ROOT / "examples" / "wordcount.py"
STATEFUL = ROOT / "examples" / "wordcount_stateful.py"
EXACTLY_ONCE = ROOT / "examples" / "wordcount_exactly_once.py"
FEEDER = Path(__file__).parent / "feeder.py"


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """Supervisors (``squall serve`` processes) sharing one namespace, and the CLI."""

    def __init__(self, bootstrap: str, tmp: Path, shutdown_timeout_s: float = 20.0) -> None:
        self.bootstrap = bootstrap
        self.tmp = tmp
        self.namespace = f"t{uuid.uuid4().hex[:8]}"
        self.shutdown_timeout_s = shutdown_timeout_s
        self.serves: dict[str, tuple[subprocess.Popen[bytes], int]] = {}
        self.feeders: list[subprocess.Popen[bytes]] = []

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            SQUALL_BOOTSTRAP_SERVERS=self.bootstrap,
            SQUALL_CONTROL_NAMESPACE=self.namespace,
            SQUALL_SHUTDOWN_TIMEOUT_SECS=str(self.shutdown_timeout_s),
            SQUALL_LOG_LEVEL="INFO",
            PYTHONPATH=str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""),
        )
        env.update(extra)
        return env

    # -- supervisors -----------------------------------------------------------------
    def serve(self, sid: str) -> int:
        """Start supervisor ``sid``; returns its HTTP port."""
        port = free_port()
        log = open(self.tmp / f"serve-{sid}.log", "ab")  # noqa: SIM115 - the child owns it
        env = self.env(SQUALL_DATA_DIR=str(self.tmp / "data"), SQUALL_HTTP_PORT=str(port), SQUALL_SUPERVISOR_ID=sid)
        proc = subprocess.Popen([sys.executable, "-m", "service.cli", "serve"], stdout=log, stderr=subprocess.STDOUT, env=env)
        log.close()
        self.serves[sid] = (proc, port)
        return port

    def http(self, sid: str, path: str) -> tuple[int, str]:
        port = self.serves[sid][1]
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError as e:
            return 0, str(e)

    def metric(self, sid: str, name: str) -> float:
        _, text = self.http(sid, "/metrics")
        for line in text.splitlines():
            if line.startswith(name + "{") or line.startswith(name + " "):
                return float(line.rsplit(" ", 1)[1])
        return -1.0

    def wait_ready(self, sids: list[str], workers: int, timeout_s: float = 120.0) -> float:
        """Wait until every supervisor in ``sids`` is ready and together they run
        ``workers`` workers; returns the seconds it took."""
        start = time.monotonic()
        while True:
            states = [self.http(s, "/readyz") for s in sids]
            running = sum(max(0.0, self.metric(s, "squall_supervisor_workers")) for s in sids)
            if all(code == 200 for code, _ in states) and running == workers:
                return time.monotonic() - start
            for s in sids:
                assert self.serves[s][0].poll() is None, f"supervisor {s} exited:\n{self.log(s)[-3000:]}"
            assert time.monotonic() - start < timeout_s, f"not ready after {timeout_s} s: {states}, {running} workers\n{self.log(sids[0])[-3000:]}"
            time.sleep(0.3)

    def log(self, sid: str) -> str:
        return (self.tmp / f"serve-{sid}.log").read_text(errors="replace")

    def kill9(self, sid: str) -> None:
        proc, _ = self.serves[sid]
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

    def term(self, sid: str, timeout_s: float = 60.0) -> int:
        proc, _ = self.serves[sid]
        proc.send_signal(signal.SIGTERM)
        return proc.wait(timeout_s)

    # -- the CLI ---------------------------------------------------------------------
    def squall(self, *args: str, check: bool = True, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        got = subprocess.run([sys.executable, "-m", "service.cli", *args], capture_output=True, text=True, env=env or self.env(), timeout=300)
        if check:
            assert got.returncode == 0, f"squall {' '.join(args)} exited {got.returncode}:\n{got.stdout}\n{got.stderr}"
        return got

    def status(self, name: str) -> dict[str, Any]:
        status: dict[str, Any] = json.loads(self.squall("status", name, "--json").stdout)
        return status

    # -- input and output --------------------------------------------------------------
    def feed(self, topic: str, path: Path, seconds: float, partitions: int = 2) -> subprocess.Popen[bytes]:
        """Start a separate producer process writing ``path``'s lines over ``seconds``."""
        proc = subprocess.Popen(
            [sys.executable, str(FEEDER), self.bootstrap, topic, str(path), str(seconds), str(partitions)], stdout=subprocess.PIPE, env=self.env()
        )
        self.feeders.append(proc)
        return proc

    def committed(self, name: str, spout: str = "lines", partitions: int = 2) -> list[int]:
        """The spout group's committed offsets, asked again while its coordinator moves (after a
        broker pause or restart), as the executors ask (``streams.kafka.clients.committed_offsets``)."""
        c = new_consumer({"bootstrap.servers": self.bootstrap, "group.id": f"squall.{name}.{spout}", "log_level": 0})
        try:
            got = committed_offsets(c, [TopicPartition(f"squall.{name}.{spout}", p) for p in range(partitions)], f"test {name}")
            return [got.get(p, 0) for p in range(partitions)]
        finally:
            c.close()

    def wait_committed(self, name: str, total: int, timeout_s: float = 180.0) -> None:
        deadline = time.monotonic() + timeout_s
        while sum(got := self.committed(name)) < total:
            assert time.monotonic() < deadline, f"[{name}] committed {got} of {total} after {timeout_s} s"
            time.sleep(0.5)

    def counts(self, name: str) -> Counter[str]:
        out: Counter[str] = Counter()
        for rec in read_topic(self.bootstrap, f"squall.{name}.counts"):
            out[rec["word"]] += rec["count"]
        return out

    def spout_totals(self, name: str) -> str:
        """The spouts' counters summed over their latest snapshots (for assertion messages)."""
        b = self.board(name)
        try:
            total: Counter[str] = Counter()
            for snap in b.latest.values():
                if snap["kind"] == "spout":
                    total.update({k: v for k, v in snap["counters"].items() if k in LEDGER_TOTALS})
            return f"spouts {dict(total)}"
        finally:
            b.close()

    def board(self, name: str) -> StatsBoard:
        """``name``'s stats read to their end as of now (``read_to_now``: a running topology
        never gives ``catch_up`` the quiet moment it waits for, so it waited out its timeout)."""
        b = StatsBoard(self.bootstrap, name)
        assert b.read_to_now(), f"[{name}] stats not read to their end"
        return b

    def close(self) -> None:
        """Stop the feeders and SIGKILL the supervisors (their workers die with them,
        ``PR_SET_PDEATHSIG``). A test's
        namespace and topics are its own, so nothing a killed supervisor left behind is read again;
        the drain itself is tested where it is asserted (``test_sigterm_drains...``)."""
        for p in self.feeders:
            if p.poll() is None:
                p.kill()
        for proc, _ in self.serves.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
        for proc, _ in self.serves.values():
            try:
                proc.wait(self.shutdown_timeout_s + 15)
            except subprocess.TimeoutExpired:
                proc.kill()


def worker_pids(name: str) -> list[int]:
    """Worker processes of topology ``name`` (their plan lives under .../topologies/<name>/)."""
    out = subprocess.run(["pgrep", "-f", f"service.worker .*/topologies/{name}/"], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]
