"""A topology whose spout cannot open: a fatal error."""

from __future__ import annotations

from typing import Any

from streams import FatalError, KafkaSpout, Topology, TopologyBuilder


class Broken(KafkaSpout):
    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        raise FatalError(f"[{context.this_component_id}] cannot reach the source system")


def topology() -> Topology:
    b = TopologyBuilder()
    b.set_spout("src", Broken(), 1)
    return b.create_topology("broken", {"topology.workers": 1})
