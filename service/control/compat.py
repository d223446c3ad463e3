"""Whether a new version of a topology can replace the running one worker by worker (``squall update``, issue 51).

A rolling update keeps every task's input topic, partition, offsets and state, and lets
workers of both versions run side by side for a while: a tuple an old worker emits is read by
a new one and the other way round. That holds only if what the two versions say to each other,
and where, is unchanged (Heron's ``update`` and Kafka Streams' rolling upgrades draw the same
line):

* every existing component keeps its kind (spout or bolt) and its task count (tasks are the
  partitions of its input topic, and its state is kept per task);
* and its global task ids (``__ack_result`` partition ``t`` is spout task ``t``; spouts come
  first, then bolts, each in declaration order: a new component goes after the existing ones
  of its kind, and a new spout would move every bolt's ids);
* every existing stream keeps its fields (and whether it is direct): an old emitter and a new
  reader must agree on the values' order;
* every existing subscription keeps its grouping (kind and fields): a fields grouping that
  changed would send a key to another task than the one holding its state.

Components, streams and subscriptions may be added (their topics are created) or removed (they
drain, then stop). Pure: :func:`compare` reads two :class:`~streams.model.spec.Topology`
(``tests/unit/service/test_compat.py`` has one of each case).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from streams.config import TopologyConfig
from streams.model.spec import ComponentDef, Subscription, Topology
from streams.wire.naming import ACKER_COMPONENT


@dataclass(frozen=True)
class Refusal:
    """One incompatible change: the component it is about and what changed (a sentence)."""

    component: str
    what: str

    def __str__(self) -> str:
        return f"[{self.component}] {self.what}"


@dataclass(frozen=True)
class UpdateDiff:
    """What a new version changes: components and streams added and removed, and the refusals (empty: compatible)."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    streams_added: tuple[tuple[str, str], ...] = ()
    streams_removed: tuple[tuple[str, str], ...] = ()
    refusals: tuple[Refusal, ...] = field(default_factory=tuple)

    @property
    def compatible(self) -> bool:
        """Whether the update may roll worker by worker."""
        return not self.refusals

    def reason(self) -> str:
        """The refusals, one a line (empty when compatible)."""
        return "\n".join(str(r) for r in self.refusals)

    def summary(self) -> str:
        """One line for ``status`` and the actions list: what is added and removed."""
        parts = []
        if self.added:
            parts.append("components added: " + ", ".join(self.added))
        if self.removed:
            parts.append("components removed: " + ", ".join(self.removed))
        if self.streams_added:
            parts.append("streams added: " + ", ".join(f"{c}/{s}" for c, s in self.streams_added))
        if self.streams_removed:
            parts.append("streams removed: " + ", ".join(f"{c}/{s}" for c, s in self.streams_removed))
        return "; ".join(parts) or "same components and streams"


def _grouping(sub: Subscription) -> str:
    """A subscription's grouping as a user reads it: ``fields(word)``, ``shuffle``, ``custom(ModHash)``."""
    if sub.fields:
        return f"{sub.kind.value}({', '.join(sub.fields)})"
    if sub.custom is not None:
        return f"{sub.kind.value}({type(sub.custom).__name__})"
    return sub.kind.value


def _component(old: ComponentDef, new: ComponentDef) -> list[Refusal]:
    out: list[Refusal] = []
    cid = old.id
    if old.is_spout != new.is_spout:
        kinds = ("a spout", "a bolt")
        out.append(Refusal(cid, f"would change from {kinds[not old.is_spout]} to {kinds[not new.is_spout]}"))
        return out
    if old.num_tasks != new.num_tasks:
        out.append(
            Refusal(cid, f"its task count would change from {old.num_tasks} to {new.num_tasks} (tasks are its input topic's partitions and hold its state)")
        )
    elif old.task_base != new.task_base:
        before = f"{old.task_base}..{old.task_base + old.num_tasks - 1}"
        after = f"{new.task_base}..{new.task_base + new.num_tasks - 1}"
        out.append(
            Refusal(
                cid,
                f"its global task ids would move from {before} to {after} "
                "(a component added before it or removed; declare new components after the existing ones)",
            )
        )
    for stream, sdef in old.streams.items():
        now = new.streams.get(stream)
        if now is None:
            continue
        if now.fields != sdef.fields:
            out.append(Refusal(cid, f"stream {stream!r} would change its fields from {list(sdef.fields)} to {list(now.fields)}"))
        elif now.direct != sdef.direct:
            out.append(Refusal(cid, f"stream {stream!r} would {'become' if now.direct else 'stop being'} direct"))
    before_subs = {(s.component, s.stream): s for s in old.inputs}
    for sub in new.inputs:
        was = before_subs.get((sub.component, sub.stream))
        if was is not None and _grouping(was) != _grouping(sub):
            out.append(Refusal(cid, f"its subscription to {sub.component}/{sub.stream} would change grouping from {_grouping(was)} to {_grouping(sub)}"))
    return out


def compare(old: Topology, new: Topology, old_conf: TopologyConfig | None = None, new_conf: TopologyConfig | None = None) -> UpdateDiff:
    """What replacing ``old`` with ``new`` changes, and whether it can roll (see the module docstring).

    With both resolved configs, the ackers must stay too: their count (``topology.acker.executors``: the
    ``__acker`` partitions, by root id, hold the pending trees) and their runtime.
    """
    refusals: list[Refusal] = []
    if old_conf is not None and new_conf is not None:
        if old_conf.ackers != new_conf.ackers:
            refusals.append(
                Refusal(
                    ACKER_COMPONENT,
                    f"topology.acker.executors would change from {old_conf.ackers} to {new_conf.ackers} (its partitions hold the trees)",
                )
            )
        if old_conf.acker_runtime != new_conf.acker_runtime:
            refusals.append(Refusal(ACKER_COMPONENT, f"squall.acker.runtime would change from {old_conf.acker_runtime} to {new_conf.acker_runtime}"))
    added = tuple(c for c in new.components if c not in old.components)
    removed = tuple(c for c in old.components if c not in new.components)
    streams_added: list[tuple[str, str]] = []
    streams_removed: list[tuple[str, str]] = []
    for cid, o in old.components.items():
        n = new.components.get(cid)
        if n is None:
            continue
        refusals += _component(o, n)
        streams_added += [(cid, s) for s in n.streams if s not in o.streams]
        streams_removed += [(cid, s) for s in o.streams if s not in n.streams]
    return UpdateDiff(added, removed, tuple(streams_added), tuple(streams_removed), tuple(refusals))
