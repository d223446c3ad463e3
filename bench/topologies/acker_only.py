"""A topology whose only running part is the acker (for bench/acker.py)."""

from __future__ import annotations

from streams import KafkaSpout, Topology, TopologyBuilder


def topology() -> Topology:
    builder = TopologyBuilder()
    builder.set_spout("src", KafkaSpout(), 1)
    return builder.create_topology("ackerbench", {"topology.acker.executors": 1})
