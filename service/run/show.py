"""What ``squall run --show COMPONENT[:STREAM]`` names: a stream checked against the topology."""

from __future__ import annotations

from service.exceptions import InputError
from streams.model.spec import Topology
from streams.model.tuple import DEFAULT_STREAM
from streams.wire.naming import ACKER_COMPONENT


def shown_stream(topology: Topology, spec: str) -> str:
    """``COMPONENT[:STREAM]`` as ``component:stream`` (default stream ``default``).

    Raises InputError naming the component or stream when the topology has no such one, or
    when the stream has no fields (nothing to show).
    """
    component, _, stream = spec.partition(":")
    stream = stream or DEFAULT_STREAM
    cdef = topology.components.get(component)
    if cdef is None or component == ACKER_COMPONENT:
        raise InputError(f"[{component}] --show: no such component in {topology.name} (components: {', '.join(sorted(topology.components))})")
    sdef = cdef.streams.get(stream)
    if sdef is None:
        raise InputError(f"[{component}] --show: no stream {stream!r} (streams: {', '.join(sorted(cdef.streams)) or 'none'})")
    if not sdef.fields:
        raise InputError(f"[{component}] --show: stream {stream!r} declares no fields")
    return f"{component}:{stream}"
