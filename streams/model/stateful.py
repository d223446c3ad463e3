"""Stateful bolts (Storm's ``IStatefulBolt`` and ``KeyValueState``), with exactly-once state updates.

A :class:`StatefulBolt` gets its task's :class:`~streams.state.keyvalue.KeyValueState` in
``init_state`` (after ``prepare``, before the first tuple) and updates it in ``execute``. The
runtime (:class:`StatefulBoltExecutor`):

* **checkpoints** the state's changes every ``topology.state.checkpoint.interval.ms``
  (Storm's key; default 1000) into ``squall.state.url`` (SQLite, PostgreSQL, or ``kafka://``:
  a compacted changelog topic, :mod:`streams.kafka.changelog_store`), in one transaction
  with the ids of the tuples applied since the last checkpoint; and sooner, at most every
  :data:`IDLE_CHECKPOINT_S`, when its input ran dry with acks waiting (no tuple between two
  ticks): a trickle of input is not held for a whole interval, and a spout's pending bound
  ramps up as fast as without a hold;
* **defers acks**: a tuple the bolt acked is acked for real only after the checkpoint that
  holds its effect (Storm's StatefulBoltExecutor), so a crash replays what the state lost;
* **applies each tuple once**: a tuple whose id (the same on every replay,
  :mod:`streams.state.keyvalue`) was applied already is acked without calling ``execute``;
* **rolls back** when the bolt fails a tuple (or ``execute`` raises): the state goes back to
  the last checkpoint, and every tuple executed since is failed and replayed;
* restores, after a crash or a move to another worker, the last checkpoint.

So a tuple's effect is in the state exactly once, although tuples are delivered at least
once, when the bolts upstream emit the same tuples for the same input (``split`` does; a bolt
that emits at random, or on a timer, gets new ids on a replay: at least once). A replay must
reach the task that applied the original, so a stateful bolt subscribes with a grouping that
picks the task from the tuple: fields, global, all, direct or custom; shuffle is refused.

Differences from Storm (docs/design.md, "Stateful bolts"): no checkpoint spout and no
prepare/commit/rollback stream; each task checkpoints on its own clock, and tuple ids, not a
consistent cut, keep partial trees from counting twice.

Example, the stateful word count (examples/wordcount_stateful.py)::

    >>> class Count(StatefulBolt):
    ...     def init_state(self, state):
    ...         self.counts = state
    ...     def execute(self, tuple):
    ...         word = tuple.get("word")
    ...         self.counts[word] = self.counts.get(word, 0) + 1
    ...         self.collector.ack(tuple)
    >>> StatefulBoltExecutor(Count()).needs_tuple_ids
    True
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from typing_extensions import override

from streams.config import TopologyConfig
from streams.exceptions import FailedException, StateError, TopologyError
from streams.model.bolt import DelegatingBolt
from streams.model.collector import Anchors, OutputCollector
from streams.model.component import Component, Hold
from streams.model.context import TopologyContext
from streams.model.tuple import DEFAULT_STREAM, Tuple
from streams.state.keyvalue import AppliedIds, Checkpointer, KeyValueState

log = logging.getLogger("squall.stateful")

PRUNE_EVERY = 10
"""Checkpoint intervals between two reads of the spouts' committed offsets (forgetting old tuple ids)."""

IDLE_CHECKPOINT_S = 0.2
"""Least time between two checkpoints taken early because the input ran dry (seconds)."""


class StatefulBolt(Component):
    """A bolt with checkpointed key-value state (Storm's ``BaseStatefulBolt<KeyValueState>``).

    Ack or fail every tuple as a :class:`~streams.model.bolt.Bolt` does; the runtime holds
    the acks until the state that includes the tuple is checkpointed.
    """

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        """Called once per task copy, before ``init_state``."""
        self.collector = collector

    def init_state(self, state: KeyValueState) -> None:
        """The task's state as of its last checkpoint (empty at first). Keep it: it is the same object for the task's life."""
        raise NotImplementedError

    def execute(self, tuple: Tuple) -> None:  # noqa: A002 - Storm's name
        """Process one tuple, updating the state; ack or fail it."""
        raise NotImplementedError

    def reads_only(self, tuple: Tuple) -> bool:  # noqa: A002
        """True for a tuple that only reads the state (a query).

        Such a tuple is executed on every delivery, replays included, never deduplicated nor
        remembered, and its ack is not held for a checkpoint. The default, False: every tuple
        may change the state.
        """
        return False

    def replayed(self, tuple: Tuple) -> None:  # noqa: A002
        """A tuple whose effect is already in the state came again (its tree replays).

        Emit what it should emit downstream, anchored to it, and change nothing; ack nothing (the
        runtime does). Without this, what a stateful bolt emits is emitted once: a replay caused by a failure
        downstream of it would find nothing to replay. The default emits nothing.
        """

    def pre_commit(self) -> None:
        """Called just before each checkpoint (Storm's ``preCommit``): put what must be saved into the state."""

    def state_restored(self) -> None:
        """Called after a rollback put the last checkpoint back into the state (the object ``init_state`` got).

        ``init_state`` is not called again, so what the bolt keeps besides the state (a cache,
        a set of tuples already failed once) survives; rebuild here what derives from the state.
        """

    def cleanup(self) -> None:
        """Called when the worker stops cleanly (a checkpoint follows)."""


class _DeferringCollector:
    """Holds the bolt's acks until the next checkpoint; a fail rolls the task back."""

    __slots__ = ("_collector", "_owner")

    def __init__(self, collector: OutputCollector, owner: StatefulBoltExecutor) -> None:
        self._collector = collector
        self._owner = owner

    def emit(self, values: list[Any], anchors: Anchors = None, stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit as a bolt does (anchored to what you pass)."""
        return self._collector.emit(values, anchors=anchors, stream=stream)

    def emit_direct(self, task: int, values: list[Any], anchors: Anchors = None, stream: str = DEFAULT_STREAM) -> None:
        """Emit to one global ``task`` on a direct stream."""
        self._collector.emit_direct(task, values, anchors=anchors, stream=stream)

    def ack(self, tuple: Tuple) -> None:  # noqa: A002
        """Acked for real after the checkpoint that holds its effect (a read-only tuple at once: it has no effect to hold)."""
        if tuple is self._owner.reading:
            self._collector.ack(tuple)
        else:
            self._owner.acked.append(tuple)

    def fail(self, tuple: Tuple, reason: str | None = None) -> None:  # noqa: A002
        """Roll the task back to its last checkpoint; this tuple and every one executed since replay (``reason`` is reported)."""
        self._owner.rollback(tuple)
        if reason is not None:
            self._collector.report_error(reason, tuple)

    def report_error(self, error: BaseException | str, tuple: Tuple | None = None) -> None:  # noqa: A002
        """Record ``error`` as the component's error (Storm's ``reportError``)."""
        self._collector.report_error(error, tuple)

    def reset_timeout(self, tuple: Tuple) -> None:  # noqa: A002
        """Restart the timeout of ``tuple``'s trees."""
        self._collector.reset_timeout(tuple)


class StatefulBoltExecutor(DelegatingBolt):
    """Runs a :class:`StatefulBolt` as a :class:`Bolt` (Storm's ``StatefulBoltExecutor``; see the module docstring).

    Args:
      inner: the user's bolt.
      clock: seconds (monotonic), for the checkpoint interval.
    """

    needs_tuple_ids = True
    needs_same_task_replays = True

    def __init__(self, inner: StatefulBolt, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(inner)
        self.inner: StatefulBolt = inner
        self.clock = clock
        self.component = "?"
        self.state = KeyValueState()
        self.applied = AppliedIds()
        self.checkpointer: Checkpointer | None = None
        self.executed: list[Tuple] = []
        """Tuples executed since the last checkpoint (a rollback fails them)."""
        self.acked: list[Tuple] = []
        """Tuples the bolt acked since the last checkpoint (acked for real after it)."""
        self.interval_s = 1.0
        self.retention_s = 600.0
        """Applied tuple ids are kept at least this long (seconds): copies a bolt re-reads after a restart."""
        self.last_checkpoint = 0.0
        self.next_prune = 0.0
        """When the next checkpoint may forget old tuple ids (clock seconds)."""
        self.checkpoints = 0
        self.duplicates = 0
        """Replayed tuples skipped: their effect was already in the state (count)."""
        self.rollbacks = 0
        self.idle_checkpoints = 0
        """Checkpoints taken before the interval because the input ran dry (count)."""
        self.busy = False
        """A tuple was executed since the last tick."""
        self.user_ticks = False
        self.positions: Callable[[], dict[int, int]] | None = None
        self.reading: Tuple | None = None
        """The read-only tuple being executed (:meth:`StatefulBolt.reads_only`): its ack goes through at once."""

    # -- topology time -----------------------------------------------------------------------------
    @override
    def validate(self, component_id: str) -> None:
        self.component = component_id
        super().validate(component_id)

    @override
    def validate_conf(self, component_id: str, conf: TopologyConfig) -> None:
        if conf.state_checkpoint_interval_ms / 1000 >= conf.message_timeout_secs and conf.ackers:
            raise TopologyError(
                f"[{component_id}] topology.state.checkpoint.interval.ms ({conf.state_checkpoint_interval_ms}) must be below "
                f"topology.message.timeout.secs ({conf.message_timeout_secs:g} s): acks wait for the checkpoint"
            )
        super().validate_conf(component_id, conf)

    @override
    def get_component_configuration(self) -> dict[str, Any] | None:
        conf = dict(super().get_component_configuration() or {})
        tick = TopologyConfig.model_validate(conf).tick_tuple_freq_secs
        self.user_ticks = tick is not None
        conf[_TICK_KEY] = CHECKPOINT_TICK_S if tick is None else min(tick, CHECKPOINT_TICK_S)
        return conf

    @override
    def hold(self) -> Hold:
        return Hold(checkpointed=True)

    # -- run time --------------------------------------------------------------------------------
    @override
    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.component = context.this_component_id
        self.collector = collector
        url = context.config.state_url
        if not url:
            raise StateError(f"[{self.component}] a stateful bolt needs a state store: set squall.state.url")
        store = context.io.state_stores(self.component).kv_store(url, self.component)
        self.checkpointer = Checkpointer(store, f"{context.topology.name}.{self.component}", context.this_task_index)
        self.state = self.checkpointer.restore(self.applied)
        self.interval_s = context.config.state_checkpoint_interval_ms / 1000
        self.retention_s = context.config.state_dedupe_retention_secs
        self.last_checkpoint = self.clock()
        self.next_prune = self.last_checkpoint + PRUNE_EVERY * self.interval_s
        self.positions = context.io.source_positions
        context.register_metric("state_checkpoints", lambda: float(self.checkpoints))
        context.register_metric("state_duplicates", lambda: float(self.duplicates))
        context.register_metric("state_rollbacks", lambda: float(self.rollbacks))
        context.register_metric("state_idle_checkpoints", lambda: float(self.idle_checkpoints))
        context.register_metric("state_applied_ids", lambda: float(len(self.applied)))
        context.register_metric("state_applied_ids_bytes", lambda: float(self.applied.nbytes()))
        log.info(
            "[%s] task %d restored checkpoint %d: %d keys, %d tuple ids",
            self.component,
            context.this_task_id,
            self.checkpointer.checkpoint,
            len(self.state),
            len(self.applied),
        )
        self.inner.prepare(conf, context, _DeferringCollector(collector, self))
        self.inner.init_state(self.state)

    @override
    def execute(self, tuple: Tuple) -> None:
        if tuple.is_tick:
            if self.user_ticks:  # the bolt's tick first (a window fires), so the checkpoint holds what it did
                self._run(tuple, None)
            since = self.clock() - self.last_checkpoint
            if since >= self.interval_s:
                self.checkpoint()
            elif not self.busy and self.acked and since >= IDLE_CHECKPOINT_S:
                self.idle_checkpoints += 1
                self.checkpoint()
            self.busy = False
            return
        self.busy = True
        inner = self.inner
        if inner.reads_only(tuple):  # a query: no effect to dedupe, hold or roll back
            self.reading = tuple
            try:
                inner.execute(tuple)
            finally:
                self.reading = None
            return
        tid = tuple.tid
        if tid is not None and not self.applied.add(tid):
            self.duplicates += 1
            inner.replayed(tuple)  # emit again what it emitted, so its replayed tree reaches downstream
            self.acked.append(tuple)  # its effect is in the state: ack it with the next checkpoint
            return
        self.executed.append(tuple)
        self._run(tuple, tuple)

    def _run(self, tuple: Tuple, failed: Tuple | None) -> None:  # noqa: A002
        """The bolt's ``execute``; a failure rolls the task back (``failed``: the tuple to fail with it), and any other exception is raised again after that."""
        try:
            self.inner.execute(tuple)
        except FailedException:
            self.rollback(failed)
        except Exception:
            self.rollback(failed)
            raise

    def checkpoint(self) -> None:
        """Commit the state's changes and the tuple ids applied since the last checkpoint, then ack what they cover.

        Steps:

        1. every ``PRUNE_EVERY`` checkpoint intervals, read the spouts' committed offsets and forget the
           ids of checkpoints older than ``squall.state.dedupe.retention.secs`` whose records
           are all below them (no copy can come back: :meth:`AppliedIds.forget`);
        2. write the checkpoint (one transaction);
        3. ack the tuples the bolt acked before it.

        A store that fails leaves everything pending (retried at the next tick; the tuples may
        time out and replay, and are then skipped as duplicates).
        """
        assert self.checkpointer is not None
        self.last_checkpoint = self.clock()
        # 1. What may be forgotten.
        forget = 0
        if self.positions is not None and self.last_checkpoint >= self.next_prune:
            self.next_prune = self.last_checkpoint + PRUNE_EVERY * self.interval_s
            forget = self.applied.forget(self.positions(), time.time() - self.retention_s)
        # 2. The checkpoint, with what the bolt adds to it first (Storm's preCommit).
        self.inner.pre_commit()
        try:
            self.checkpointer.commit(self.state, self.applied, forget)
        except StateError as exc:
            log.warning("[%s] checkpoint failed (retried at the next tick): %s", self.component, exc)
            return
        self.checkpoints += 1
        # 3. Acks.
        for t in self.acked:
            self.collector.ack(t)
        self.acked = []
        self.executed = []

    def rollback(self, failed: Tuple | None) -> None:
        """Back to the last checkpoint: the state reloads (the same object; then ``state_restored``), and every tuple executed since fails (they replay).

        ``failed``: the tuple the bolt failed (None: a tick's work failed).
        """
        assert self.checkpointer is not None
        self.rollbacks += 1
        self.applied.forget_pending()
        snapshot = Checkpointer(self.checkpointer.backend, self.checkpointer.name, self.checkpointer.task).restore(AppliedIds())
        self.state.replace(snapshot)
        for t in self.executed:
            self.collector.fail(t)
        if failed is not None:
            self.collector.fail(failed)
        # A duplicate skipped since the checkpoint stands on its original: if that original was
        # rolled back too (its id is forgotten), the duplicate's tree must replay as well, or it
        # would complete with no effect left in the state.
        keep = []
        for t in self.acked:
            if t.settled:
                continue
            if t.tid is not None and t.tid in self.applied:
                keep.append(t)
            else:
                self.collector.fail(t)
        log.info("[%s] rolled back to checkpoint %d: failed %d tuples (they replay)", self.component, self.checkpointer.checkpoint, len(self.executed))
        self.executed = []
        self.acked = keep
        self.inner.state_restored()

    @override
    def cleanup(self) -> None:
        try:
            self.inner.cleanup()
        finally:
            if self.checkpointer is not None:
                self.checkpoint()  # a clean stop commits and acks: the next owner replays nothing


CHECKPOINT_TICK_S = 0.1
"""How often a stateful task checks whether a checkpoint is due (seconds)."""

_TICK_KEY = str(TopologyConfig.model_fields["tick_tuple_freq_secs"].alias)
