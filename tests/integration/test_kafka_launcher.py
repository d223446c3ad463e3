"""The Apache Kafka launcher the tests and ``squall broker`` use: two launchers that pick the same ports.

Two pytest-xdist workers once picked the same free ports at the same moment: the second
worker's node could not bind them and died, its readiness check was answered by the first
worker's node, and its tests ran on the other worker's broker until that one stopped.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from service.brokers import apache_kafka
from service.brokers.apache_kafka import ApacheKafka, free_ports
from tests.integration.conftest import CACHE

pytestmark = pytest.mark.broker


def test_a_launcher_whose_ports_are_taken_is_not_fooled_by_the_other_node_and_starts_on_fresh_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = ApacheKafka(workdir=tmp_path / "first", cache=CACHE)
    first.start()
    try:
        taken = [first.nodes[1].port, first.nodes[1].controller_port]
        picks = iter([taken])
        monkeypatch.setattr(apache_kafka, "free_ports", lambda n: next(picks, None) or free_ports(n))
        second = ApacheKafka(workdir=tmp_path / "second", cache=CACHE)
        second.start()
        try:
            node = second.nodes[1]
            assert [node.port, node.controller_port] != taken  # started again, on fresh ports
            assert second.cluster_id != first.cluster_id
            md = AdminClient({"bootstrap.servers": second.bootstrap}).list_topics(timeout=10)
            assert md.cluster_id == second.cluster_id  # its own node answers there, not the first one's
            assert "Address already in use" in (tmp_path / "second").joinpath("node-1", "broker.log").read_text(errors="replace")
        finally:
            second.stop()
    finally:
        first.stop()
