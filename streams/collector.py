"""Collectors: Storm's anchoring algebra on Kafka.

* **Anchored emit.** For each anchor tuple ``a`` and each target task, draw one random
  64-bit edge id ``e``; XOR ``e`` into ``a.ack_val`` and into the new tuple's
  ``anchors_to_ids[r]`` for every root ``r`` of ``a`` (Storm BoltOutputCollectorImpl).
* **Ack.** For each ``(r, id)`` of the input, ack ``(r, id ^ ack_val(input))``.
* **Spout emit.** A fresh random root id; one edge id per target task; the spout sends
  ``init(root, XOR of those edge ids, spout_task)``.

Acker messages are buffered in an :class:`AckBuffer` and XOR-coalesced per root until the
executor flushes: one op per root per flush, one record per acker partition.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from streams.acker_wire import OP_ACK, OP_FAIL, OP_INIT, OP_RESET, acker_partition, chunks, encode_ops
from streams.codec import encode_json, encode_rooted, encode_tuple
from streams.component import DEFAULT_STREAM
from streams.context import TopologyContext
from streams.exceptions import FatalError
from streams.grouping import DirectGrouping, Grouping, make_grouping
from streams.ids import new_id
from streams.naming import component_topic
from streams.stats import LogHistogram
from streams.topology import Topology
from streams.tuple import Tuple

ProduceFn = Callable[..., None]


@dataclass
class Route:
    """One subscriber of a stream: where and how to send."""

    target: str
    topic: str
    n: int
    base: int
    grouping: Grouping
    direct: bool


@dataclass
class Output:
    topic: str
    key_index: int
    fields: tuple[str, ...]


class Router:
    """Per-task routing table: ``stream -> [Route]`` and ``stream -> [Output]``."""

    def __init__(self, topology: Topology, component: str, context: TopologyContext) -> None:
        cdef = topology.components[component]
        self.component = component
        self.routes: dict[str, list[Route]] = {}
        self.outputs: dict[str, list[Output]] = {}
        self.direct: dict[str, bool] = {}
        for stream, sdef in cdef.streams.items():
            fields, direct = sdef.fields, sdef.direct
            routes = []
            for target, sub in topology.subscribers(component, stream):
                grouping = make_grouping(
                    sub.kind,
                    n=target.num_tasks,
                    source_fields=fields,
                    fields=sub.fields,
                    target=target.id,
                    base=target.task_base,
                    context=context,
                    source=(component, stream),
                    custom=copy.deepcopy(sub.custom) if sub.custom is not None else None,
                )
                routes.append(Route(target.id, component_topic(topology.name, target.id), target.num_tasks, target.task_base, grouping, direct))
            self.routes[stream] = routes
            self.direct[stream] = direct
            self.outputs[stream] = [
                Output(o.topic_for(topology.name), fields.index(o.key_field), fields)
                for o in topology.outputs
                if o.component == component and o.stream == stream
            ]

    def stream(self, stream: str) -> list[Route]:
        try:
            return self.routes[stream]
        except KeyError:
            raise FatalError(f"[{self.component}] emit on undeclared stream {stream!r} (declared: {sorted(self.routes)})") from None


class AckBuffer:
    """Acker ops buffered between flushes, XOR-coalesced per root (one op per root per flush).

    ``ackers`` is ``topology.acker.executors`` (> 0); ops go to partition
    ``murmur2(root) % ackers`` of ``topic``.
    """

    __slots__ = ("ackers", "acks", "fails", "inits", "resets", "topic")

    def __init__(self, topic: str, ackers: int) -> None:
        self.topic = topic
        self.ackers = ackers
        self.acks: dict[int, int] = {}
        self.fails: set[int] = set()
        self.inits: list[tuple[int, int, int]] = []
        self.resets: set[int] = set()

    def __len__(self) -> int:
        return len(self.acks) + len(self.fails) + len(self.inits) + len(self.resets)

    def init(self, root: int, val: int, spout_task: int) -> None:
        self.inits.append((root, val, spout_task))

    def ack(self, root: int, val: int) -> None:
        acks = self.acks
        acks[root] = acks.get(root, 0) ^ val

    def fail(self, root: int) -> None:
        self.fails.add(root)
        self.acks.pop(root, None)

    def reset(self, root: int) -> None:
        self.resets.add(root)

    def drain(self) -> dict[int, list[list[int]]]:
        """Take every buffered op, grouped by acker partition (inits first)."""
        parts: dict[int, list[list[int]]] = {}
        n = self.ackers
        for root, val, task in self.inits:
            parts.setdefault(acker_partition(root, n), []).append([OP_INIT, root, val, task])
        for root, val in self.acks.items():
            if val:
                parts.setdefault(acker_partition(root, n), []).append([OP_ACK, root, val])
        for root in self.fails:
            parts.setdefault(acker_partition(root, n), []).append([OP_FAIL, root])
        for root in self.resets:
            parts.setdefault(acker_partition(root, n), []).append([OP_RESET, root])
        self.inits = []
        self.acks = {}
        self.fails = set()
        self.resets = set()
        return parts

    def flush(self, produce: ProduceFn) -> int:
        """Produce one record per acker partition; returns the number of ops sent."""
        sent = 0
        for part, ops in self.drain().items():
            for chunk in chunks(ops):
                produce(self.topic, encode_ops(chunk), partition=part)
            sent += len(ops)
        return sent


class _Emitter:
    def __init__(self, router: Router, task_id: int, produce: ProduceFn) -> None:
        self.router = router
        self.component = router.component
        self.task_id = task_id
        self.produce = produce
        self.emitted = 0
        """Emit calls (Storm UI's "emitted")."""
        self.transferred = 0
        """Tuples sent to tasks: an emit to N tasks counts N (Storm UI's "transferred")."""
        self.epoch = new_id() >> 33
        """This task's life (random per collector, i.e. per executor start): batch tuples carry
        it, so a task that restarted mid-batch is told apart (:mod:`streams.batch_tracker`)."""

    def _outputs(self, stream: str, values: list[Any]) -> None:
        for out in self.router.outputs[stream]:
            record = dict(zip(out.fields, values, strict=False))
            self.produce(out.topic, encode_json(record), key=str(values[out.key_index]).encode())

    def _check_direct(self, stream: str, direct_call: bool) -> None:
        is_direct = self.router.direct.get(stream)
        if is_direct is None:
            self.router.stream(stream)  # raises naming the stream
        if is_direct and not direct_call:
            raise FatalError(f"[{self.component}] emit on direct stream {stream!r}: use emit_direct(task, ...)")
        if direct_call and not is_direct:
            raise FatalError(f"[{self.component}] emit_direct on stream {stream!r}, which is not declared direct")

    def _direct_route(self, stream: str, task: int) -> tuple[Route, int]:
        for route in self.router.stream(stream):
            if isinstance(route.grouping, DirectGrouping) and route.base <= task < route.base + route.n:
                return route, task - route.base
        raise FatalError(f"[{self.component}] emit_direct to task {task}, which does not subscribe directly to {stream!r}")


class OutputCollector(_Emitter):
    """A bolt task's collector (Storm's OutputCollector). Not thread-safe."""

    def __init__(self, router: Router, task_id: int, produce: ProduceFn, acks: AckBuffer | None) -> None:
        super().__init__(router, task_id, produce)
        self.acks = acks
        self.acked = 0
        self.failed = 0
        self.process_latency: LogHistogram | None = None
        """When set (by the executor): receipt-to-ack time of every acked tuple (Storm UI's
        "process latency"), in seconds."""

    @staticmethod
    def _anchor_list(anchors: Tuple | Sequence[Tuple] | None) -> Sequence[Tuple]:
        if anchors is None:
            return ()
        if isinstance(anchors, Tuple):
            return (anchors,)
        return anchors

    def _send(self, route: Route, local: int, stream: str, values: list[Any], anchors: Sequence[Tuple]) -> None:
        if len(anchors) == 1 and self.acks is not None:  # the hot path: one anchor in one tree
            a = anchors[0]
            if len(a.anchors) == 1 and a.batch is None:
                e = new_id()
                a.ack_val ^= e
                (root,) = a.anchors
                self.produce(route.topic, encode_rooted(stream, self.component, self.task_id, values, root, e), partition=local)
                return
        ids: dict[int, int] = {}
        batch = None
        if anchors:
            for a in anchors:
                if a.anchors and self.acks is not None:
                    e = new_id()
                    a.ack_val ^= e
                    for root in a.anchors:
                        ids[root] = ids.get(root, 0) ^ e
                batch = batch or a.batch  # a transactional tuple's children belong to its batch
        tagged = None if batch is None else (batch[0], batch[1], self.epoch)
        self.produce(route.topic, encode_tuple(stream, self.component, self.task_id, values, ids, tagged), partition=local)

    def emit(self, values: list[Any], anchors: Tuple | Sequence[Tuple] | None = None, stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit ``values`` on ``stream`` anchored to ``anchors`` (a tuple, a list for
        multi-anchoring, or None for an unanchored, untracked emit).

        Returns the global task ids it was sent to. Raises FatalError on an undeclared
        or direct stream.
        """
        if self.router.direct.get(stream):
            self._check_direct(stream, False)
        anchor_list = self._anchor_list(anchors)
        tasks: list[int] = []
        for route in self.router.stream(stream):
            for local in route.grouping.choose(values):
                self._send(route, local, stream, values, anchor_list)
                tasks.append(route.base + local)
        if self.router.outputs[stream]:
            self._outputs(stream, values)
        self.emitted += 1
        self.transferred += len(tasks)
        return tasks

    def emit_direct(self, task: int, values: list[Any], anchors: Tuple | Sequence[Tuple] | None = None, stream: str = DEFAULT_STREAM) -> None:
        """Emit to one global ``task`` on a stream declared direct."""
        self._check_direct(stream, True)
        route, local = self._direct_route(stream, task)
        self._send(route, local, stream, values, self._anchor_list(anchors))
        self.emitted += 1
        self.transferred += 1

    def ack(self, tuple: Tuple) -> None:  # noqa: A002
        """Ack ``tuple``: for each root, XOR ``edge ^ ack_val`` into the pending ack."""
        if tuple.settled:
            return
        tuple.settled = True
        if tuple.stream[:2] != "__":  # system tuples are not counted (Storm's UI)
            self.acked += 1
            if self.process_latency is not None and tuple.received_at:
                self.process_latency.record(time.perf_counter() - tuple.received_at)
        acks = self.acks
        if acks is not None:
            ack_val = tuple.ack_val
            pending = acks.acks  # AckBuffer.ack, inlined (hot path)
            for root, edge in tuple.anchors.items():
                pending[root] = pending.get(root, 0) ^ edge ^ ack_val

    def fail(self, tuple: Tuple) -> None:  # noqa: A002
        """Fail ``tuple``: every tree it belongs to fails and its spout tuple is replayed."""
        if tuple.settled:
            return
        tuple.settled = True
        self.failed += 1
        if self.acks is not None:
            for root in tuple.anchors:
                self.acks.fail(root)

    def reset_timeout(self, tuple: Tuple) -> None:  # noqa: A002
        """Restart the timeout of every tree ``tuple`` belongs to."""
        if self.acks is not None:
            for root in tuple.anchors:
                self.acks.reset(root)


class SpoutOutputCollector(_Emitter):
    """A spout task's collector (Storm's SpoutOutputCollector).

    ``on_tracked(root, msg_id, weight)`` registers a tracked tree that carries ``weight``
    message ids with the executor;
    ``on_untracked_ack(msg_id, weight)`` schedules ``spout.ack(msg_id)`` when nothing will
    track the tree (0 ackers, or no target task), as Storm does.
    """

    def __init__(
        self,
        router: Router,
        task_id: int,
        produce: ProduceFn,
        acks: AckBuffer | None,
        on_tracked: Callable[[int, Any, int], None],
        on_untracked_ack: Callable[[Any, int], None],
    ) -> None:
        super().__init__(router, task_id, produce)
        self.acks = acks
        self.on_tracked = on_tracked
        self.on_untracked_ack = on_untracked_ack

    def emit(self, values: list[Any], msg_id: Any = None, stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit a spout tuple; with a ``msg_id`` (and ackers) it is tracked as a new tree.

        Returns the global task ids it was sent to.
        """
        if self.router.direct.get(stream):
            self._check_direct(stream, False)
        tasks: list[int] = []
        tracked = msg_id is not None and self.acks is not None
        root = new_id() if tracked else 0
        xor = 0
        for route in self.router.stream(stream):
            for local in route.grouping.choose(values):
                if tracked:
                    e = new_id()
                    xor ^= e
                    payload = encode_tuple(stream, self.component, self.task_id, values, {root: e})
                else:
                    payload = encode_tuple(stream, self.component, self.task_id, values, {})
                self.produce(route.topic, payload, partition=local)
                tasks.append(route.base + local)
        if self.router.outputs[stream]:
            self._outputs(stream, values)
        self.emitted += 1
        self.transferred += len(tasks)
        self._track(tracked, root, xor, msg_id, bool(tasks))
        return tasks

    def emit_direct(self, task: int, values: list[Any], msg_id: Any = None, stream: str = DEFAULT_STREAM) -> None:
        self._check_direct(stream, True)
        route, local = self._direct_route(stream, task)
        tracked = msg_id is not None and self.acks is not None
        root = new_id() if tracked else 0
        e = new_id()
        anchors = {root: e} if tracked else {}
        self.produce(route.topic, encode_tuple(stream, self.component, self.task_id, values, anchors), partition=local)
        self.emitted += 1
        self.transferred += 1
        self._track(tracked, root, e, msg_id, True)

    def _track(self, tracked: bool, root: int, xor: int, msg_id: Any, sent: bool) -> None:
        if tracked and sent:
            assert self.acks is not None
            self.acks.init(root, xor, self.task_id)
            self.on_tracked(root, msg_id, 1)
        elif msg_id is not None:
            self.on_untracked_ack(msg_id, 1)

    def emit_tree(self, tuples: Sequence[tuple[str, list[Any]]], msg_id: Any) -> list[int]:
        """Emit several spout tuples, ``[(stream, values), ...]``, as **one** tree under
        ``msg_id`` (with ackers): one root id, one edge per tuple and target task, one
        ``init``; the tree is acked when every tuple is fully processed, and failed (the
        spout's ``fail(msg_id)``) if any of them fails or it times out. Its weight towards
        ``topology.max.spout.pending`` is ``len(tuples)``. Without ackers each tuple is sent
        untracked and ``msg_id`` is acked at once, as :meth:`emit` does.

        Why: a tree costs the same acker ops, acker state and ack result whether it carries
        one record or a hundred; :class:`streams.kafka_spout.KafkaSpout` sends a run of
        records of one partition per tree (``squall.spout.tree.records``).

        Returns the global task ids sent to, one entry per tuple and target. Raises
        FatalError on an undeclared or direct stream (before anything is sent).
        """
        direct = self.router.direct
        for stream, _ in tuples:
            if direct.get(stream) is not False:
                self._check_direct(stream, False)
        tracked = self.acks is not None
        root = new_id() if tracked else 0
        xor = 0
        tasks: list[int] = []
        component, task_id, produce, outputs = self.component, self.task_id, self.produce, self.router.outputs
        for stream, values in tuples:
            for route in self.router.stream(stream):
                for local in route.grouping.choose(values):
                    if tracked:
                        e = new_id()
                        xor ^= e
                        payload = encode_rooted(stream, component, task_id, values, root, e)
                    else:
                        payload = encode_tuple(stream, component, task_id, values, {})
                    produce(route.topic, payload, partition=local)
                    tasks.append(route.base + local)
            if outputs[stream]:
                self._outputs(stream, values)
        self.emitted += len(tuples)
        self.transferred += len(tasks)
        if tracked and tasks:
            assert self.acks is not None
            self.acks.init(root, xor, task_id)
            self.on_tracked(root, msg_id, len(tuples))
        else:
            self.on_untracked_ack(msg_id, len(tuples))
        return tasks

    def open_tree(self, msg_id: Any, batch: tuple[int, int]) -> BatchTree:
        """Start one tuple tree for a whole batch (``(txid, attempt)``): every tuple emitted
        through it shares one root, and the tree is acked only when all of them are fully
        processed (Storm's transactional spouts: a batch is one tree). Call
        :meth:`BatchTree.close` after the last emit: it sends the one ``init``.
        Raises FatalError when there are no ackers (a batch cannot be tracked)."""
        if self.acks is None:
            raise FatalError(f"[{self.component}] a transactional spout needs ackers (topology.acker.executors > 0)")
        return BatchTree(self, msg_id, batch)


class BatchTree:
    """The tree of one batch (see :meth:`SpoutOutputCollector.open_tree`). Not thread-safe."""

    def __init__(self, collector: SpoutOutputCollector, msg_id: Any, batch: tuple[int, int]) -> None:
        self.collector = collector
        self.msg_id = msg_id
        self.batch = batch
        self.root = new_id()
        self.xor = 0
        self.emitted = 0

    def _send(self, route: Route, local: int, stream: str, values: list[Any]) -> None:
        e = new_id()
        self.xor ^= e
        c = self.collector
        c.produce(route.topic, encode_tuple(stream, c.component, c.task_id, values, {self.root: e}, (self.batch[0], self.batch[1], c.epoch)), partition=local)
        self.emitted += 1

    def emit(self, values: list[Any], stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit ``values`` on ``stream`` in this batch; returns the global target tasks."""
        c = self.collector
        tasks: list[int] = []
        for route in c.router.stream(stream):
            for local in route.grouping.choose(values):
                self._send(route, local, stream, values)
                tasks.append(route.base + local)
        if c.router.outputs[stream]:
            c._outputs(stream, values)
        if stream[:2] != "__":  # a commit is a system tuple: not counted (Storm's UI)
            c.emitted += 1
            c.transferred += len(tasks)
        return tasks

    def emit_direct(self, task: int, values: list[Any], stream: str) -> None:
        """Emit to one global ``task`` on a direct stream, in this batch."""
        c = self.collector
        c._check_direct(stream, True)
        route, local = c._direct_route(stream, task)
        self._send(route, local, stream, values)

    def close(self) -> int:
        """Send the tree's ``init`` (the XOR of every edge) and start tracking it; returns
        the root id. A batch that reached no task is acked at once."""
        c = self.collector
        if self.emitted:
            assert c.acks is not None
            c.acks.init(self.root, self.xor, c.task_id)
            c.on_tracked(self.root, self.msg_id, 1)
        else:
            c.on_untracked_ack(self.msg_id, 1)
        return self.root
