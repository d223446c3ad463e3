"""Checks of a topology's components against their resolved config (before any worker runs them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streams.config import TopologyConfig, resolve
from streams.model.spec import Topology


def check_confs(topology: Topology, *layers: Mapping[str, Any] | None) -> dict[str, TopologyConfig]:
    """Resolve each component's config and check it.

    The layers go low to high, then the topology's and the component's own; each
    component's :meth:`~streams.model.component.Component.validate_conf` is called.

    Returns ``component id -> config``. Raises ConfigError or TopologyError naming the component.
    """
    out: dict[str, TopologyConfig] = {}
    for cid, cdef in topology.components.items():
        conf = resolve(*layers, topology.conf, cdef.conf, where=cid)
        cdef.obj.validate_conf(cid, conf)
        out[cid] = conf
    return out
