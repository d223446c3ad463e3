"""A bolt that holds each tuple longer than the message timeout, calling ``reset_timeout`` on
every tick until it acks: no tree may time out, at the acker or at the spout."""

from __future__ import annotations

import time
from typing import Any

from streams import Bolt, KafkaSpout, Topology, TopologyBuilder, Tuple

HOLD_S = 6.0
"""How long each tuple is held (seconds): above the topology's 3 s message timeout."""


class Hold(Bolt):
    def get_component_configuration(self) -> dict[str, Any]:
        return {"topology.tick.tuple.freq.secs": 0.5}

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.held: list[tuple[float, Tuple]] = []

    def execute(self, tuple: Tuple) -> None:  # noqa: A002
        now = time.monotonic()
        if not tuple.is_tick:
            self.held.append((now, tuple))
            return
        keep = []
        for since, t in self.held:
            if now - since >= HOLD_S:
                self.collector.ack(t)
            else:
                self.collector.reset_timeout(t)
                keep.append((since, t))
        self.held = keep


def topology() -> Topology:
    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout(), 1)
    b.set_bolt("hold", Hold(), 1).shuffle_grouping("lines")
    return b.create_topology("resetting", {"topology.workers": 1, "topology.message.timeout.secs": 3})
