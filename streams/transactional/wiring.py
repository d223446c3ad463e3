"""How a transactional spout makes its topology transactional (Storm's ``TransactionalTopologyBuilder`` and ``BatchSubtopologyBuilder.extendTopology``).

:class:`~streams.transactional.spout.TransactionalKafkaSpout` calls
:func:`wire_transactional` from its :meth:`~streams.model.spout.Spout.extend_topology` hook,
so :class:`~streams.model.topology.TopologyBuilder` never imports this package.
"""

from __future__ import annotations

from streams.exceptions import TopologyError
from streams.model.batch import BATCH_END_STREAM, COMMIT_STREAM, SYSTEM_STREAMS, BatchBolt
from streams.model.spec import ComponentDef, GroupingKind, Subscription
from streams.transactional.coordinated_bolt import CoordinatedBolt


def wire_transactional(spout_id: str, defs: list[ComponentDef]) -> None:
    """Make a topology transactional around its spout ``spout_id``.

    Every bolt runs in a :class:`~streams.transactional.coordinated_bolt.CoordinatedBolt`
    and subscribes to its inputs' end markers (``__batch_end``, direct); committers also
    subscribe to the spout's commits (``__commit``, all grouping). ``defs`` is changed in
    place.

    Raises:
      TopologyError: naming the component, when the topology has another spout, the
        spout has more than one task or executor, or a committer is not a BatchBolt.
    """
    spouts = [d for d in defs if d.is_spout]
    if len(spouts) != 1:
        raise TopologyError(f"[{spout_id}] a transactional topology has exactly one spout, got {[d.id for d in spouts]}")
    spout = spouts[0]
    if spout.num_tasks != 1 or spout.parallelism != 1:
        raise TopologyError(f"[{spout.id}] a transactional spout has one task and one executor (it reads every partition), got {spout.num_tasks}")
    for d in defs:
        if d.is_spout:
            continue
        if d.committer and not isinstance(d.obj, BatchBolt):
            raise TopologyError(f"[{d.id}] a committer bolt must be a BatchBolt, got {type(d.obj).__name__}")
        d.obj = CoordinatedBolt(d.obj, d.committer)
        upstream = list(dict.fromkeys(sub.component for sub in d.inputs if sub.stream not in SYSTEM_STREAMS))
        d.inputs += [Subscription(u, BATCH_END_STREAM, GroupingKind.DIRECT) for u in upstream]
        if d.committer:
            d.inputs.append(Subscription(spout.id, COMMIT_STREAM, GroupingKind.ALL))
