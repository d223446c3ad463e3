"""Whether a worker's state can follow it to another machine (issue 25: SQLite with several supervisors).

A stateful bolt's checkpoints and a committer's Trident state live where ``squall.state.url``
says. The service's default is a SQLite file under the supervisor's own data directory: with
one supervisor that is fine, but with two a task that moves (a rebalance, a supervisor that
dies) started on the other machine's file, empty, and silently counted from zero. A
supervisor that is not alone (it does not own every slot, :mod:`service.control.slots`) therefore
refuses to start a worker whose stateful components keep their state in SQLite, unless
``squall.state.sqlite.shared`` says every supervisor reaches the same file (several
supervisors on one machine). PostgreSQL, and ``kafka://`` for stateful bolts, follow a task
anywhere.

Pure: the caller gives the plan and whether it is alone.

>>> from streams import TopologyBuilder, KafkaSpout
>>> b = TopologyBuilder(); _ = b.set_spout("lines", KafkaSpout())
>>> local_state_components(b.create_topology("t"), TopologyConfig())
{}
"""

from __future__ import annotations

from collections.abc import Iterable

from streams.config import TopologyConfig, resolve
from streams.model.spec import Topology

LOCAL_SCHEMES = ("sqlite://",)
"""State URLs whose data is a file on one machine."""


def local_state_components(topology: Topology, conf: TopologyConfig) -> dict[str, str]:
    """``{component: url}`` for each stateful bolt or committer whose resolved ``squall.state.url`` is a local file (SQLite)."""
    base = conf.model_dump(by_alias=True, exclude_unset=True)
    out: dict[str, str] = {}
    for cdef in topology.components.values():
        if not (cdef.committer or cdef.obj.hold().checkpointed):
            continue
        resolved = resolve(base, cdef.conf, where=cdef.id)
        url = resolved.state_url or ""
        if url.startswith(LOCAL_SCHEMES) and not resolved.state_sqlite_shared:
            out[cdef.id] = url
    return out


def refusal(topology: str, worker: int, components: Iterable[str], local: dict[str, str], alone: bool) -> str | None:
    """Why worker ``worker`` of ``topology`` (running ``components``) may not start on a supervisor that is ``alone`` or not; None if it may.

    >>> print(refusal("wc", 1, ["count"], {"count": "sqlite:///d/wc.db"}, alone=False)[:61])
    [wc] worker w1 not started: [count] keeps its state in sqlite
    >>> refusal("wc", 1, ["count"], {"count": "sqlite:///d/wc.db"}, alone=True) is None
    True
    """
    if alone:
        return None
    held = [c for c in dict.fromkeys(components) if c in local]
    if not held:
        return None
    which = ", ".join(f"[{c}] keeps its state in {local[c]}" for c in held)
    return (
        f"[{topology}] worker w{worker} not started: {which}, a file on one machine, and more than one supervisor serves "
        "the topology (a task that moves would start on another machine's empty file). Kill it and submit it again with "
        "-c squall.state.url=postgresql://... (or kafka:// for stateful bolts), or set squall.state.sqlite.shared=true "
        "if every supervisor reaches the same file"
    )
