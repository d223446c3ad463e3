"""The collectors' implementations.

Storm's anchoring algebra on Kafka (Storm's ``executor/bolt/BoltOutputCollectorImpl`` and
``executor/spout/SpoutOutputCollectorImpl``).

User code sees only the Protocols of :mod:`streams.model.collector`.

* **Anchored emit.** For each anchor tuple ``a`` and each target task, draw one random
  64-bit edge id ``e``; XOR ``e`` into ``a.ack_val`` and into the new tuple's
  ``anchors_to_ids[r]`` for every root ``r`` of ``a`` (Storm BoltOutputCollectorImpl).
* **Ack.** For each ``(r, id)`` of the input, ack ``(r, id ^ ack_val(input))``. A run's tuple
  (:class:`~streams.wire.codec.RunAnchors`) has no id of its own: a tuple acked before the
  run's last sends nothing and leaves its ack val (its children's edges) to the run, and the
  last one acks the run's edge with all of them, one op for the run. Every id is still in
  exactly two ops, so the ops may reach the acker in any order; the tree could not complete
  before the run's last ack anyway, since the run's edge is pending until then.
* **Spout emit.** A fresh random root id; one edge id per target task; the spout sends
  ``init(root, XOR of those edge ids, spout_task)``.
* **Runs.** With :attr:`_Emitter.runs` set (the executors' :class:`~streams.runtime.transfer.TupleTransfer`),
  a tuple in one tree (or untracked) with no tuple id or trace goes out in a run (a batch's too): the
  edge id is drawn once per run, not per tuple, and only the emit that begins a run XORs it
  into its anchor's ack val (or the spout's init). :mod:`streams.runtime.transfer` says why that
  keeps Storm's algebra.

Acker messages go to an :class:`~streams.runtime.acks.AckBuffer`, which the executor
flushes after the outputs (:mod:`streams.runtime.executor`).

Task hooks (:class:`streams.TaskHook`, Storm's ``ITaskHook``) see each emit, ack and fail
here; the hot path pays one truth test of the task's hook list when it has none.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from streams.exceptions import FatalError
from streams.model.collector import Anchors
from streams.model.grouping import DirectGrouping
from streams.model.hooks import BoltAckInfo, BoltFailInfo, EmitInfo, TaskHook
from streams.model.tuple import DEFAULT_STREAM, Tuple
from streams.monitoring.errors import ErrorLog
from streams.monitoring.stats import LogHistogram
from streams.monitoring.trace import Tracer
from streams.runtime.acks import AckBuffer, ProduceFn
from streams.runtime.routing import Output, Route, Router
from streams.runtime.transfer import TupleTransfer
from streams.wire.acker import why_text
from streams.wire.codec import RunAnchors, encode_batched, encode_head, encode_json, encode_rooted, encode_tuple, encode_values
from streams.wire.ids import child_path, new_id


def source_tids(msg_id: Any, n: int) -> list[tuple[int, int, int]] | None:
    """The ids across replays of ``n`` spout tuples emitted under ``msg_id``, if it gives them.

    ``msg_id.tuple_ids()``: a KafkaSpout record's source key and offset. Other message ids give none: their tuples are not deduplicated (at least once).
    """
    ids = getattr(msg_id, "tuple_ids", None)
    if ids is None:
        return None
    out: list[tuple[int, int, int]] = ids()
    return out if len(out) == n else None


_UNKNOWN: Any = object()
"""Not looked up yet (a stream's entry in ``BoltOutputCollectorImpl._single``)."""


class _Emitter:
    def __init__(self, router: Router, task_id: int, produce: ProduceFn, epoch: int, hooks: list[TaskHook] | None) -> None:
        self.router = router
        self.hooks: list[TaskHook] = hooks if hooks is not None else []
        """The task's hooks: its context's list (``TopologyContext.hooks``), so a hook added in ``prepare`` is seen."""
        self.component = router.component
        self.task_id = task_id
        self.produce = produce
        self.emitted = 0
        """Emit calls (Storm UI's "emitted")."""
        self.transferred = 0
        """Tuples sent to tasks: an emit to N tasks counts N (Storm UI's "transferred")."""
        self.tuple_ids = router.tuple_ids
        """Give tuples ids across replays (a stateful topology)."""
        self.epoch = epoch
        """This task's life (its worker's claim epoch, :mod:`streams.runtime.fencing`): every tuple
        carries it, so a receiver drops what an older owner of the task wrote late, and a task
        that restarted mid-batch is told apart (:mod:`streams.transactional.batch_tracker`)."""
        self.tracer: Tracer | None = None
        """Set by the executor with ``topology.debug``: the events of sampled trees (:mod:`streams.monitoring.trace`)."""
        self.runs: TupleTransfer | None = None
        """Set by the executor: the transfer its ``produce`` packs into; tuples then go out in runs (see the module docstring)."""
        self._heads: dict[str, bytes] = {}

    def _head(self, stream: str) -> bytes:
        """This task's run head on ``stream`` (:func:`~streams.wire.codec.encode_head`), made once."""
        head = self._heads.get(stream)
        if head is None:
            head = self._heads[stream] = encode_head(stream, self.component, self.task_id, self.epoch)
        return head

    def _hook_emit(self, values: list[Any], stream: str, tasks: list[int], anchors: Sequence[Tuple] = (), msg_id: Any = None) -> None:
        info = EmitInfo(values, stream, self.task_id, tasks, tuple(anchors), msg_id)
        for hook in self.hooks:
            hook.emit(info)

    def _outputs(self, stream: str, values: list[Any]) -> None:
        self._to_outputs(self.router.outputs[stream], values)

    def _to_outputs(self, outputs: list[Output], values: list[Any]) -> None:
        """Write ``values`` to each external output (``set_output``): a JSON object of its fields, keyed by its key field's text."""
        produce = self.produce
        for out in outputs:
            key = values[out.key_index]
            # zip without strict=: the keyword alone made dict(zip(...)) take 0.64 us instead of 0.37 (a word count's every count)
            record = dict(zip(out.fields, values))  # noqa: B905 (strict=False is the default: the shorter one ends it)
            produce(out.topic, encode_json(record), key=(key if type(key) is str else str(key)).encode())

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


class BoltOutputCollectorImpl(_Emitter):
    """A bolt task's collector (Storm's ``BoltOutputCollectorImpl``), implementing :class:`~streams.model.collector.OutputCollector`.

    Not thread-safe.
    """

    def __init__(
        self, router: Router, task_id: int, produce: ProduceFn, acks: AckBuffer | None, *, epoch: int = 0, hooks: list[TaskHook] | None = None
    ) -> None:
        super().__init__(router, task_id, produce, epoch, hooks)
        self.acks = acks
        self.acked = 0
        self.failed = 0
        self.process_latency: LogHistogram | None = None
        """When set (by the executor): receipt-to-ack time of every acked tuple with a
        ``received_at`` (Storm UI's "process latency"), in seconds, recorded ``latency_weight`` times."""
        self.latency_weight = 1
        """How many tuples a timed one stands for (the executor's sample: :data:`streams.runtime.bolt.LATENCY_SAMPLE`)."""
        self.errors: ErrorLog | None = None
        """When set (by the executor): where :meth:`report_error` and a fail's reason go."""
        self._single: dict[str, Route | None] = {}
        """Per stream: its one route if an emit may take :meth:`emit`'s hot path, else None (:meth:`_single_route`)."""
        self._sink_only: dict[str, list[Output]] = {}
        """Per stream whose emits go only to external outputs (no subscriber, not direct): those outputs (:meth:`_single_route`)."""
        self._last_anchor: Tuple | None = None
        """The anchor of the last emit that took the hot path, and its :meth:`_run_root` (an input's emits come together)."""
        self._last_root = -1

    @staticmethod
    def _anchor_list(anchors: Anchors) -> Sequence[Tuple]:
        if anchors is None:
            return ()
        if isinstance(anchors, Tuple):
            return (anchors,)
        return anchors

    @staticmethod
    def _child_tid(anchors: Sequence[Tuple]) -> tuple[int, int, int] | None:
        """The id of a tuple emitted anchored to ``anchors``: the same on every replay if the bolt emits the same way.

        Its source and offset are the lowest anchor id's; its path mixes each anchor's path with
        the emits anchored to it so far (:func:`streams.wire.ids.child_path`).
        """
        if len(anchors) == 1:
            a = anchors[0]
            tid = a.tid
            if tid is None:
                return None
            n = a.emits
            a.emits = n + 1
            return (tid[0], tid[1], child_path(tid[2], n))
        tagged = sorted((a for a in anchors if a.tid is not None), key=lambda a: a.tid)  # type: ignore[arg-type, return-value]
        if not tagged:
            return None
        path = 0
        for a in tagged:
            assert a.tid is not None
            path = child_path(path ^ a.tid[2], a.emits)
            a.emits += 1
        first = tagged[0].tid
        assert first is not None
        return (first[0], first[1], path)

    def _run_root(self, a: Tuple) -> int:
        """The root a tuple anchored to ``a`` alone travels in a run under: ``a``'s one root, 0 if untracked; -1 if it cannot travel in a run.

        It cannot when ``a`` is in several trees, or in a batch but no tree, or its tree is
        traced (a traced emit is an event of its own). The one rule for both :meth:`emit`'s hot
        path and :meth:`_send`.
        """
        roots = a.anchors
        if len(roots) > 1 or (a.traced and self.tracer is not None):
            return -1
        if roots and self.acks is not None:
            (root,) = roots
            return root
        return 0 if a.batch is None else -1

    def _send(self, route: Route, local: int, stream: str, values: list[Any], anchors: Sequence[Tuple], tid: tuple[int, int, int] | None = None) -> None:
        runs = self.runs
        if runs is not None and tid is None and len(anchors) == 1:  # one anchor: a run if :meth:`_run_root` allows
            a = anchors[0]
            root = self._run_root(a)
            if root >= 0:
                e = runs.emit_run(route.topic, local, self._head(stream), root, encode_values(values), a.batch)
                if e:
                    a.ack_val ^= e
                return
        if len(anchors) == 1 and self.acks is not None:  # packing without runs: one anchor in one tree
            a = anchors[0]
            if len(a.anchors) == 1 and (a.batch is None or tid is None):
                e = new_id()
                a.ack_val ^= e
                (root,) = a.anchors
                batch = a.batch  # a transactional tuple's children belong to its batch
                if batch is None:
                    payload = encode_rooted(stream, self.component, self.task_id, self.epoch, values, root, e, tid)
                else:
                    payload = encode_batched(stream, self.component, self.task_id, self.epoch, values, root, e, batch)
                self.produce(route.topic, payload, partition=local)
                if a.traced and self.tracer is not None:  # its one tree is sampled (set when it was read)
                    self.tracer.event("emit", root, self.task_id, edge=e, target=route.target, stream=stream)
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
        if not ids and batch is None and tid is None and self.runs is not None:  # untracked: a run without a root
            self.runs.emit_run(route.topic, local, self._head(stream), 0, encode_values(values))
            return
        self.produce(route.topic, encode_tuple(stream, self.component, self.task_id, values, ids, batch, tid, epoch=self.epoch), partition=local)
        if self.tracer is not None:
            for root, e in ids.items():
                if self.tracer.sampled(root):
                    self.tracer.event("emit", root, self.task_id, edge=e, target=route.target, stream=stream)

    def emit(self, values: list[Any], anchors: Anchors = None, stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit ``values`` on ``stream`` anchored to ``anchors`` (a tuple, a list for multi-anchoring, or None for an unanchored, untracked emit).

        Returns the global task ids it was sent to. Raises FatalError on an undeclared or
        direct stream.

        The hot path (a bolt's emit anchored to its one input, as a BasicBolt's every emit is): a
        stream with one subscriber and no output topic, one anchor in at most one tree, runs on,
        no hooks, tracing or tuple ids. Its values are encoded once (not once per target task),
        and its routing is looked up once per stream (:meth:`_single_route`).
        """
        route = self._single.get(stream, _UNKNOWN)
        if route is _UNKNOWN:
            route = self._single_route(stream)
        runs = self.runs
        if route is not None and runs is not None and type(anchors) is Tuple and not self.hooks and not self.tuple_ids:
            a = anchors
            if a is self._last_anchor:  # a split's words: one input, many emits
                root = self._last_root
            else:
                root = self._last_root = self._run_root(a)
                self._last_anchor = a
            if root >= 0:
                head = self._heads.get(stream) or self._head(stream)
                data = encode_values(values)
                topic, base, batch = route.topic, route.base, a.batch
                tasks = []
                for local in route.grouping.choose(values):
                    e = runs.emit_run(topic, local, head, root, data, batch)
                    if e:
                        a.ack_val ^= e
                    tasks.append(base + local)
                self.emitted += 1
                self.transferred += len(tasks)
                return tasks
        elif route is None and not self.hooks and not self.tuple_ids:
            outputs = self._sink_only.get(stream)
            if outputs is not None:  # a stream only users' topics read, such as the word count's "counts"
                self._to_outputs(outputs, values)
                self.emitted += 1
                return []
        return self._emit(values, anchors, stream)

    def _single_route(self, stream: str) -> Route | None:
        """``stream``'s one route if an emit on it may take :meth:`emit`'s hot path (one subscriber, not direct, no output topic), else None."""
        router = self.router
        routes = router.routes.get(stream)
        outputs = router.outputs.get(stream)
        route = routes[0] if routes is not None and len(routes) == 1 and not router.direct.get(stream) and not outputs else None
        self._single[stream] = route
        if routes is not None and not routes and not router.direct.get(stream) and outputs:
            self._sink_only[stream] = outputs
        return route

    def _emit(self, values: list[Any], anchors: Anchors, stream: str) -> list[int]:
        """:meth:`emit`, every case."""
        if self.router.direct.get(stream):
            self._check_direct(stream, False)
        anchor_list = self._anchor_list(anchors)
        tid = self._child_tid(anchor_list) if self.tuple_ids and anchor_list else None
        tasks: list[int] = []
        for route in self.router.stream(stream):
            for local in route.grouping.choose(values):
                self._send(route, local, stream, values, anchor_list, tid)
                tasks.append(route.base + local)
        if self.router.outputs[stream]:
            self._outputs(stream, values)
        self.emitted += 1
        self.transferred += len(tasks)
        if self.hooks:
            self._hook_emit(values, stream, tasks, anchor_list)
        return tasks

    def emit_direct(self, task: int, values: list[Any], anchors: Anchors = None, stream: str = DEFAULT_STREAM) -> None:
        """Emit to one global ``task`` on a stream declared direct."""
        self._check_direct(stream, True)
        route, local = self._direct_route(stream, task)
        anchor_list = self._anchor_list(anchors)
        tid = self._child_tid(anchor_list) if self.tuple_ids and anchor_list else None
        self._send(route, local, stream, values, anchor_list, tid)
        self.emitted += 1
        self.transferred += 1
        if self.hooks:
            self._hook_emit(values, stream, [task], anchor_list)

    def ack(self, tuple: Tuple, *, hooked: bool = True) -> None:  # noqa: A002
        """Ack ``tuple``: for each root, XOR ``edge ^ ack_val`` into the pending ack.

        The task's hooks see it first (``bolt_ack``); one that holds it (:meth:`BoltAckInfo.hold`)
        sends it later (``hooked=False``: past the hooks), or never. Without hooks the hot path
        pays one truth test.
        """
        if tuple.settled:
            return
        tuple.settled = True
        if hooked and self.hooks and self._held_by_hooks(tuple):
            return
        if tuple.stream[:2] != "__":  # system tuples are not counted (Storm's UI)
            self.acked += 1
            if self.process_latency is not None and tuple.received_at:  # a sampled tuple (streams.runtime.bolt.LATENCY_SAMPLE)
                self.process_latency.record(time.perf_counter() - tuple.received_at, self.latency_weight)
        acks = self.acks
        if acks is not None:
            ack_val = tuple.ack_val
            pending = acks.acks  # AckBuffer.ack, inlined (hot path)
            anchors = tuple.anchors
            if type(anchors) is RunAnchors:  # a run's tuple: the run's last ack sends what the run owes
                anchors.left -= 1
                if anchors.left:
                    anchors.edge ^= ack_val  # its children's edges wait for the run's last ack
                else:
                    ack_val ^= anchors.edge
                    if ack_val:
                        root = anchors.root
                        pending[root] = pending.get(root, 0) ^ ack_val
            else:
                for root, edge in anchors.items():
                    pending[root] = pending.get(root, 0) ^ edge ^ ack_val
        if tuple.traced and self.tracer is not None:
            self.tracer.events_of(tuple, "ack", self.task_id)

    def _held_by_hooks(self, tuple: Tuple) -> bool:  # noqa: A002
        """Show the ack to the task's hooks; True if one held it (its release acks ``tuple`` past the hooks)."""
        latency = time.perf_counter() - tuple.received_at if tuple.received_at else 0.0
        info = BoltAckInfo(tuple, self.task_id, latency, lambda: self._release(tuple))
        for hook in self.hooks:
            hook.bolt_ack(info)
        return info.held

    def _release(self, tuple: Tuple) -> None:  # noqa: A002
        tuple.settled = False
        self.ack(tuple, hooked=False)

    def fail(self, tuple: Tuple, reason: str | None = None) -> None:  # noqa: A002
        """Fail ``tuple``: every tree it belongs to fails and its spout tuple is replayed; ``reason`` is reported (:meth:`report_error`).

        The fail op says why (``[component] fail: reason``, or ``[component] fail`` for Storm's
        silent fail), and so does the record's dead letter if its retries run out.
        """
        if self.fail_because(tuple, f"fail: {reason}" if reason else "fail") and reason is not None:
            self.report_error(reason, tuple)

    def fail_because(self, tuple: Tuple, why: str) -> bool:  # noqa: A002
        """Fail ``tuple`` with ``why`` on the fail op (:func:`~streams.wire.acker.why_text`), reporting nothing; False if it was settled already.

        The executor's own fails use it: an exception in ``execute`` (reported apart, with its
        traceback) says ``ZeroDivisionError: division by zero``.
        """
        if tuple.settled:
            return False
        tuple.settled = True
        self.failed += 1
        acks = self.acks
        if acks is not None and tuple.anchors:
            text = why_text(self.component, why)
            for root in tuple.anchors:
                acks.fail(root, text)
        if tuple.traced and self.tracer is not None:
            self.tracer.events_of(tuple, "fail", self.task_id)
        if self.hooks:
            info = BoltFailInfo(tuple, self.task_id, time.perf_counter() - tuple.received_at if tuple.received_at else 0.0, why)
            for hook in self.hooks:
                hook.bolt_fail(info)
        return True

    def report_error(self, error: BaseException | str, tuple: Tuple | None = None) -> None:  # noqa: A002
        """Record ``error`` in the component's errors (Storm's ``reportError``): an exception is cause ``exception``, a string cause ``fail``."""
        errors = self.errors
        if errors is None:
            return
        where, roots = (tuple.where, tuple.anchors) if tuple is not None else ("", ())
        if isinstance(error, BaseException):
            errors.report("exception", self.task_id, exc=error, where=where, roots=roots)
        else:
            errors.report("fail", self.task_id, message=error, type_name="Fail", where=where, roots=roots)

    def reset_timeout(self, tuple: Tuple) -> None:  # noqa: A002
        """Restart the timeout of every tree ``tuple`` belongs to."""
        if self.acks is not None:
            for root in tuple.anchors:
                self.acks.reset(root)


class SpoutOutputCollectorImpl(_Emitter):
    """A spout task's collector (Storm's ``SpoutOutputCollectorImpl``), implementing :class:`~streams.model.collector.SpoutOutputCollector`.

    ``on_tracked(root, msg_id, weight)`` registers a tracked tree that carries ``weight``
    message ids with the executor; ``on_untracked_ack(msg_id, weight)`` schedules
    ``spout.ack(msg_id)`` when nothing will track the tree (0 ackers, or no target task), as
    Storm does.
    """

    def __init__(
        self,
        router: Router,
        task_id: int,
        produce: ProduceFn,
        acks: AckBuffer | None,
        on_tracked: Callable[[int, Any, int], None],
        on_untracked_ack: Callable[[Any, int], None],
        *,
        epoch: int = 0,
        hooks: list[TaskHook] | None = None,
    ) -> None:
        super().__init__(router, task_id, produce, epoch, hooks)
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
        tids = source_tids(msg_id, 1) if self.tuple_ids and tracked else None
        tid = tids[0] if tids else None
        trace = tracked and self.tracer is not None and self.tracer.sampled(root)
        runs = self.runs if tid is None and not trace else None
        encoded = encode_values(values) if runs is not None else b""
        for route in self.router.stream(stream):
            for local in route.grouping.choose(values):
                if runs is not None:  # a run (see the module docstring): its first tuple's edge goes into the init
                    xor ^= runs.emit_run(route.topic, local, self._head(stream), root, encoded)
                    tasks.append(route.base + local)
                    continue
                if tracked:
                    e = new_id()
                    xor ^= e
                    payload = encode_tuple(stream, self.component, self.task_id, values, {root: e}, None, tid, epoch=self.epoch)
                    if trace:
                        self._trace_emit(root, e, route, stream)
                else:
                    payload = encode_tuple(stream, self.component, self.task_id, values, {}, epoch=self.epoch)
                self.produce(route.topic, payload, partition=local)
                tasks.append(route.base + local)
        if self.router.outputs[stream]:
            self._outputs(stream, values)
        self.emitted += 1
        self.transferred += len(tasks)
        if self.hooks:
            self._hook_emit(values, stream, tasks, msg_id=msg_id)
        self._track(tracked, root, xor, msg_id, bool(tasks))
        return tasks

    def emit_direct(self, task: int, values: list[Any], msg_id: Any = None, stream: str = DEFAULT_STREAM) -> None:
        """Emit to one global ``task`` on a direct stream; tracked as a tree under ``msg_id`` if given."""
        self._check_direct(stream, True)
        route, local = self._direct_route(stream, task)
        tracked = msg_id is not None and self.acks is not None
        root = new_id() if tracked else 0
        e = new_id()
        anchors = {root: e} if tracked else {}
        self.produce(route.topic, encode_tuple(stream, self.component, self.task_id, values, anchors, epoch=self.epoch), partition=local)
        if tracked and self.tracer is not None and self.tracer.sampled(root):
            self._trace_emit(root, e, route, stream)
        self.emitted += 1
        self.transferred += 1
        if self.hooks:
            self._hook_emit(values, stream, [task], msg_id=msg_id)
        self._track(tracked, root, e, msg_id, True)

    def _trace_emit(self, root: int, edge: int, route: Route, stream: str) -> None:
        assert self.tracer is not None
        self.tracer.event("emit", root, self.task_id, edge=edge, target=route.target, stream=stream)

    def _track(self, tracked: bool, root: int, xor: int, msg_id: Any, sent: bool) -> None:
        if tracked and sent:
            assert self.acks is not None
            self.acks.init(root, xor, self.task_id)
            self.on_tracked(root, msg_id, 1)
        elif msg_id is not None:
            self.on_untracked_ack(msg_id, 1)

    def emit_tree(self, tuples: Sequence[tuple[str, list[Any]]], msg_id: Any) -> list[int]:
        """Emit several spout tuples, ``[(stream, values), ...]``, as **one** tree under ``msg_id`` (with ackers).

        One root id, one edge per tuple and target task, one ``init``; the tree is acked
        when every tuple is fully processed, and failed (the spout's ``fail(msg_id)``) if
        any of them fails or it times out. Its weight towards ``topology.max.spout.pending``
        is ``len(tuples)``. Without ackers each tuple is sent untracked and ``msg_id`` is
        acked at once, as :meth:`emit` does.

        Why: a tree costs the same acker ops, acker state and ack result whether it carries
        one record or a hundred; :class:`streams.kafka.spout.KafkaSpout` sends a run of
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
        component, task_id, epoch, produce, outputs = self.component, self.task_id, self.epoch, self.produce, self.router.outputs
        tids = source_tids(msg_id, len(tuples)) if self.tuple_ids and tracked else None
        trace = tracked and self.tracer is not None and self.tracer.sampled(root)
        runs = self.runs if tids is None and not trace else None
        hooks = self.hooks
        for i, (stream, values) in enumerate(tuples):
            tid = tids[i] if tids is not None else None
            first = len(tasks)
            encoded = encode_values(values) if runs is not None else b""
            for route in self.router.stream(stream):
                for local in route.grouping.choose(values):
                    if runs is not None:  # a run (see the module docstring): its first tuple's edge goes into the init
                        xor ^= runs.emit_run(route.topic, local, self._head(stream), root, encoded)
                        tasks.append(route.base + local)
                        continue
                    if tracked:
                        e = new_id()
                        xor ^= e
                        payload = encode_rooted(stream, component, task_id, epoch, values, root, e, tid)
                        if trace:
                            self._trace_emit(root, e, route, stream)
                    else:
                        payload = encode_tuple(stream, component, task_id, values, {}, epoch=epoch)
                    produce(route.topic, payload, partition=local)
                    tasks.append(route.base + local)
            if outputs[stream]:
                self._outputs(stream, values)
            if hooks:
                self._hook_emit(values, stream, tasks[first:], msg_id=msg_id)
        self.emitted += len(tuples)
        self.transferred += len(tasks)
        if tracked and tasks:
            assert self.acks is not None
            self.acks.init(root, xor, task_id)
            self.on_tracked(root, msg_id, len(tuples))
        else:
            self.on_untracked_ack(msg_id, len(tuples))
        return tasks

    def open_tree(self, msg_id: Any, batch: tuple[int, int]) -> BatchTreeImpl:
        """Start one tuple tree for a whole batch (``(txid, attempt)``).

        Every tuple emitted through it shares one root, and the tree is acked only when all
        of them are fully processed (Storm's transactional spouts: a batch is one tree).
        Call :meth:`BatchTreeImpl.close` after the last emit: it sends the one ``init``.
        Raises FatalError when there are no ackers (a batch cannot be tracked).
        """
        if self.acks is None:
            raise FatalError(f"[{self.component}] a transactional spout needs ackers (topology.acker.executors > 0)")
        return BatchTreeImpl(self, msg_id, batch)


class BatchTreeImpl:
    """The tree of one batch (see :meth:`SpoutOutputCollectorImpl.open_tree`), implementing :class:`~streams.model.collector.BatchTree`.

    Not thread-safe.
    """

    def __init__(self, collector: SpoutOutputCollectorImpl, msg_id: Any, batch: tuple[int, int]) -> None:
        self.collector = collector
        self.msg_id = msg_id
        self.batch = batch
        self.root = new_id()
        self.xor = 0
        self.emitted = 0

    def _send(self, route: Route, local: int, stream: str, values: list[Any]) -> None:
        c = self.collector
        if c.runs is not None:  # a run of the batch's tree: its first tuple's edge goes into the init
            self.xor ^= c.runs.emit_run(route.topic, local, c._head(stream), self.root, encode_values(values), self.batch)
        else:
            e = new_id()
            self.xor ^= e
            c.produce(route.topic, encode_batched(stream, c.component, c.task_id, c.epoch, values, self.root, e, self.batch), partition=local)
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
        if c.hooks:
            c._hook_emit(values, stream, tasks, msg_id=self.msg_id)
        return tasks

    def emit_direct(self, task: int, values: list[Any], stream: str) -> None:
        """Emit to one global ``task`` on a direct stream, in this batch."""
        c = self.collector
        c._check_direct(stream, True)
        route, local = c._direct_route(stream, task)
        self._send(route, local, stream, values)
        if c.hooks:
            c._hook_emit(values, stream, [task], msg_id=self.msg_id)

    def close(self) -> int:
        """Send the tree's ``init`` (the XOR of every edge) and start tracking it; returns the root id.

        A batch that reached no task is acked at once.
        """
        c = self.collector
        if self.emitted:
            assert c.acks is not None
            c.acks.init(self.root, self.xor, c.task_id)
            c.on_tracked(self.root, self.msg_id, 1)
        else:
            c.on_untracked_ack(self.msg_id, 1)
        return self.root
