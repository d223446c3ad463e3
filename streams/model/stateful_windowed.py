"""Stateful windowed bolts (Storm's ``IStatefulWindowedBolt`` with persistence, STORM-2614): the window survives a crash.

A :class:`StatefulWindowedBolt` is a :class:`~streams.model.windowed.WindowedBolt` with a
checkpointed :class:`~streams.state.keyvalue.KeyValueState` (``init_state``, as a
:class:`~streams.model.stateful.StatefulBolt`). The runtime keeps the window itself in that
state, so:

* a tuple is **acked at the checkpoint after it entered the window**, not when it expires: a
  window may be longer than ``topology.message.timeout.secs`` (Storm's persistent windowing);
* after a crash the task restores, as of its last checkpoint, the bolt's state *and* the
  windows: the tuples they held, which windows fired, the watermark. Tuples after the
  checkpoint replay; a copy of one the checkpoint holds is skipped (tuple ids, as every stateful
  bolt: :mod:`streams.model.stateful`). So each window fires once with the same tuples as far
  as the state can tell, and the state's updates from ``execute(window)`` happen exactly once;
* ``execute(window)`` raising (or failing a tuple) rolls the task back to its last checkpoint:
  state and windows (then ``state_restored``); the tuples since then replay;
* emits are not anchored to the window's tuples (they were acked at a checkpoint, as in Storm);
  what the bolt emits is at least once: a window that fired after the last checkpoint fires
  again after a crash.

How the windows are stored: each held tuple once (``(values, stream, source component,
source task)`` under an internal key), and the window engine's own fields (what fired, the
watermark, the order of the tuples) as JSON with the tuples replaced by their numbers
(:meth:`streams.windowing.engine.WindowEngine.dump`), at each checkpoint. Internal keys are hidden from ``state.items()`` and ``len(state)``.

Example, a running total of tumbling 3-tuple windows::

    >>> from streams.windowing import Count
    >>> class Total(StatefulWindowedBolt):
    ...     def init_state(self, state):
    ...         self.state = state
    ...     def execute(self, window):
    ...         self.state["sum"] = self.state.get("sum", 0) + sum(t.get("n") for t in window.get_new())
    >>> ex = persistent_windows(Total().with_tumbling_window(Count(3)))
    >>> ex.hold().checkpointed, ex.needs_tuple_ids
    (True, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from typing_extensions import override

from streams.config import TopologyConfig
from streams.exceptions import StateError, TopologyError
from streams.model.collector import Anchors, OutputCollector
from streams.model.component import Hold
from streams.model.context import TopologyContext
from streams.model.stateful import StatefulBolt, StatefulBoltExecutor
from streams.model.tuple import DEFAULT_STREAM, Tuple
from streams.model.windowed import WindowedBolt, WindowedBoltExecutor, WindowedOutputCollector
from streams.state.keyvalue import KeyValueState, internal_key
from streams.windowing.engine import Firing, WindowEngine
from streams.windowing.watermark import EventTimeWindows

ENGINE_KEY = internal_key("window")
"""Where the window engine (its fields as JSON) is kept in the task's state."""


def _tuple_key(n: int) -> tuple[Any, ...]:
    return internal_key("window", n)


class StatefulWindowedBolt(WindowedBolt):
    """A windowed bolt with checkpointed state whose windows survive a crash (see the module docstring)."""

    def init_state(self, state: KeyValueState) -> None:
        """The task's state as of its last checkpoint (called once, after ``prepare``)."""
        raise NotImplementedError

    def state_restored(self) -> None:
        """Called after a rollback put the last checkpoint (state and windows) back into the state."""


class _UnanchoredCollector(WindowedOutputCollector):
    """The collector a persistent window's bolt emits through: not anchored to the window (its tuples were acked)."""

    __slots__ = ()

    @override
    def emit(self, values: list[Any], anchors: Anchors = None, stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit, anchored only to what you pass."""
        return self._collector.emit(values, anchors=anchors, stream=stream)

    @override
    def emit_direct(self, task: int, values: list[Any], anchors: Anchors = None, stream: str = DEFAULT_STREAM) -> None:
        """Emit to one global ``task`` on a direct stream."""
        self._collector.emit_direct(task, values, anchors=anchors, stream=stream)


class PersistentWindows(WindowedBoltExecutor, StatefulBolt):
    """The windows of a :class:`StatefulWindowedBolt`, kept in its state (run inside a :class:`StatefulBoltExecutor`).

    Raises TopologyError at build time for a bolt that is not a StatefulWindowedBolt.
    """

    def __init__(self, inner: StatefulWindowedBolt) -> None:
        if not isinstance(inner, StatefulWindowedBolt):
            raise TopologyError(f"persistent windows need a StatefulWindowedBolt, got {type(inner).__name__}")
        super().__init__(inner)
        self.user: StatefulWindowedBolt = inner
        self.state: KeyValueState | None = None
        self.context: TopologyContext | None = None
        self.numbers: dict[int, int] = {}
        """``id(tuple) -> its number`` for every tuple stored (strong refs in :attr:`stored`)."""
        self.stored: dict[int, Tuple] = {}
        """Number -> tuple, for every tuple in the state (until a checkpoint finds it unused)."""
        self.next_number = 1

    # -- topology time -----------------------------------------------------------------------------
    @override
    def validate_conf(self, component_id: str, conf: TopologyConfig) -> None:
        """No timeout check: a persistent window's tuples are acked at checkpoints, not when they expire."""

    @override
    def hold(self) -> Hold:
        spec = self._spec()
        return Hold(spec.hold_count, 0.0, spec.event_time, checkpointed=True)

    # -- run time --------------------------------------------------------------------------------
    @override
    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.context = context
        super().prepare(conf, context, collector)

    @override
    def _output_collector(self, collector: OutputCollector) -> WindowedOutputCollector:
        return _UnanchoredCollector(collector)

    @override
    def init_state(self, state: KeyValueState) -> None:
        """Restore the windows from ``state`` (empty at first), then hand the state to the bolt."""
        self._restore_windows(state)
        self.user.init_state(state)

    @override
    def state_restored(self) -> None:
        """After a rollback: the windows come back from the checkpoint too."""
        assert self.state is not None
        self._restore_windows(self.state)
        self.user.state_restored()

    def _restore_windows(self, state: KeyValueState) -> None:
        self.state = state
        self.numbers, self.stored = {}, {}
        spec = self._spec()
        saved = state.get(ENGINE_KEY)
        if saved is None:
            self.windows = EventTimeWindows(spec) if spec.event_time else WindowEngine(spec)
        else:
            tuples = {int(n): self._restored(int(n), state.get(_tuple_key(int(n)))) for n in saved["tuples"]}
            try:
                self.windows = (EventTimeWindows if spec.event_time else WindowEngine).load(spec, saved["engine"], tuples.__getitem__)
            except (KeyError, TypeError, ValueError) as exc:
                raise StateError(f"[{self.component}] the checkpointed window cannot be read ({exc!r}): was the window changed since?") from exc
            self.next_number = int(saved["next"])
            for n, t in tuples.items():
                self.numbers[id(t)] = n
                self.stored[n] = t
        now = self.clock()
        if isinstance(self.windows, EventTimeWindows):  # a restore is an arrival: no channel is idle yet
            self.windows.last_arrival = now
            self.windows.seen = dict.fromkeys(self.windows.seen, now)
        self.last_arrival = now

    def _restored(self, n: int, stored: Any) -> Tuple:
        assert self.context is not None
        if stored is None:
            raise TopologyError(f"[{self.component}] the checkpointed window lost its tuple {n}: the state store is inconsistent")
        values, stream, source, task = stored
        index = self.context.topology.field_index(source, stream)
        return Tuple(list(values), stream, source, int(task), {}, index)

    @override
    def _held(self, tuple: Tuple) -> None:
        """Store the tuple (written with the next checkpoint) and ack it (held until that checkpoint commits)."""
        assert self.state is not None
        n = self.next_number
        self.next_number += 1
        self.numbers[id(tuple)] = n
        self.stored[n] = tuple
        self.state[_tuple_key(n)] = [tuple.values, tuple.stream, tuple.source_component, tuple.source_task]
        self.collector.ack(tuple)

    @override
    def _expire(self, tuples: list[Tuple]) -> None:
        """Nothing to ack: they were acked at a checkpoint. Their stored copies go at the next one."""

    @override
    def _window_failed(self, rest: Sequence[Firing[Tuple]], exc: Exception) -> bool:
        """Raise: the stateful executor rolls the task (state and windows) back, and the tuples since replay."""
        raise exc

    @override
    def pre_commit(self) -> None:
        """Before each checkpoint (Storm's ``preCommit``): save the engine, drop stored tuples it no longer holds."""
        assert self.state is not None and self.windows is not None
        used: set[int] = set()

        def ref(t: Tuple) -> int:
            n = self.numbers[id(t)]
            used.add(n)
            return n

        data = self.windows.dump(ref)
        for n in [n for n in self.stored if n not in used]:
            t = self.stored.pop(n)
            del self.numbers[id(t)]
            self.state.delete(_tuple_key(n))
        self.state[ENGINE_KEY] = {"engine": data, "tuples": sorted(used), "next": self.next_number}

    @override
    def cleanup(self) -> None:
        self.inner.cleanup()  # the held tuples stay in the state (a checkpoint follows)


def persistent_windows(bolt: StatefulWindowedBolt) -> StatefulBoltExecutor:
    """What ``set_bolt`` runs for a :class:`StatefulWindowedBolt`: its windows inside a stateful bolt's checkpoints."""
    return StatefulBoltExecutor(PersistentWindows(bolt))
