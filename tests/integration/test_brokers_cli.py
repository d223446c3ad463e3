"""``squall broker`` stops its broker on SIGTERM (both kinds), and ``squall serve --embedded-broker``
says what the embedded broker is for and reports its memory (/metrics and ``squall status``)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from service.brokers.apache_kafka import free_ports

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGIES = Path(__file__).parent / "topologies"

pytestmark = pytest.mark.broker


def listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.3)
        return s.connect_ex(("127.0.0.1", port)) == 0


def children_of(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [int(p) for p in out]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


@pytest.mark.parametrize("kafka", [False, True], ids=["embedded", "apache-kafka"])
def test_squall_broker_stops_its_broker_on_sigterm(kafka: bool, tmp_path: Path) -> None:
    port = free_ports(2)[0]
    args = [sys.executable, "-m", "service.cli", "broker", "--port", str(port), *(["--kafka", "--data-dir", str(tmp_path / "k")] if kafka else [])]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        deadline = time.monotonic() + 120
        while not listening(port):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the broker did not listen within 120 s"
            time.sleep(0.2)
        brokers = children_of(proc.pid)
        assert brokers, "the broker runs as a child process"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert "stopping the broker (SIGTERM)" in err
        if not kafka:
            assert "for trying Squall, not for production" in err
        deadline = time.monotonic() + 30
        while any(alive(p) for p in brokers) or listening(port):
            assert time.monotonic() < deadline, f"broker processes {brokers} still running after squall broker exited"
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_serve_with_the_embedded_broker_warns_and_reports_its_memory(tmp_path: Path) -> None:
    broker_port, http_port = free_ports(2)
    env = dict(os.environ, SQUALL_DATA_DIR=str(tmp_path), SQUALL_CONTROL_NAMESPACE=f"t{os.getpid()}", PYTHONPATH=str(ROOT))
    env.pop("SQUALL_BOOTSTRAP_SERVERS", None)
    serve = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "serve", "--embedded-broker", "--broker-port", str(broker_port), "--http-port", str(http_port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    bootstrap = f"127.0.0.1:{broker_port}"
    try:
        rss = 0.0
        deadline = time.monotonic() + 90
        while rss <= 0:
            assert serve.poll() is None, serve.communicate()
            assert time.monotonic() < deadline, "no squall_embedded_broker_resident_memory_bytes on /metrics within 90 s"
            time.sleep(0.5)
            try:
                text = urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=2).read().decode()
            except OSError:
                continue
            for line in text.splitlines():
                if line.startswith("squall_embedded_broker_resident_memory_bytes{"):
                    rss = float(line.split()[-1])
        assert rss > 10 * 2**20  # tansu's resident memory, in bytes
        cli = [sys.executable, "-m", "service.cli"]
        submitted = subprocess.run(
            [*cli, "submit", str(TOPOLOGIES / "tiny.py"), "--bootstrap-servers", bootstrap], capture_output=True, text=True, env=env, timeout=120
        )
        assert submitted.returncode == 0, submitted.stderr
        st = subprocess.run([*cli, "status", "tiny", "--json", "--bootstrap-servers", bootstrap], capture_output=True, text=True, env=env, timeout=120)
        assert st.returncode == 0, st.stderr
        report = json.loads(st.stdout)["embedded_broker"]
        assert report is not None and report["rss_bytes"] > 10 * 2**20, st.stdout
        text_status = subprocess.run([*cli, "status", "tiny", "--bootstrap-servers", bootstrap], capture_output=True, text=True, env=env, timeout=120)
        assert "embedded broker (supervisor" in text_status.stdout and "MB resident" in text_status.stdout, text_status.stdout
    finally:
        serve.send_signal(signal.SIGTERM)
        try:
            _, err = serve.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            serve.kill()
            _, err = serve.communicate()
    assert "warning: the embedded broker keeps every record in memory" in err
