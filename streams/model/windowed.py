"""Windowed bolts (Storm's ``IWindowedBolt``, ``BaseWindowedBolt`` and ``WindowedBoltExecutor``; docs/Windowing.md).

A :class:`WindowedBolt` gets windows, not tuples: ``execute(window)`` runs each time a window
fires, with the tuples in it (:class:`TupleWindow`). Windows are by count or by time,
sliding or tumbling, by processing time or by the tuples' event time
(:mod:`streams.windowing`).

Reliability, as in Storm:

* a window's tuples are **acked when they expire** (when no later window can hold them);
* an emit from ``execute`` is **anchored to every tuple of the window**;
* a topology whose ``topology.message.timeout.secs`` is not above a time window's length
  plus its interval (plus lag and watermark interval for event time) is refused, naming
  the component (:meth:`WindowedBoltExecutor.validate_conf`);
* ``execute`` raising fails the window's tuples (they are replayed) and is logged;
* a tuple whose event time cannot be read fails (it is replayed, then dead-lettered) with an
  error naming the component and the record's topic, partition and offset;
* on a clean stop (a rebalance) held tuples are failed, so they are replayed at once to
  the task's next owner; after a crash they time out and are replayed.

Windows fire on idle streams too: the bolt's timer is its tick tuple, set to the watermark
interval (event time) or to the interval, at most 1 s (processing time). With
``with_idle_timeout(s)``, a stream without input for ``s`` seconds counts as ended: the last
windows fire (a count window fires partial) and every held tuple is acked.

Memory: a task holds each tuple of its windows once (about 64 bytes of bookkeeping plus the
tuple, some 400-600 bytes for a short tuple); beyond ``max_tuples`` (default 1,000,000) new
tuples are failed and counted (``squall_window_refused_total``).

Example, the sliding sum of storm-starter's SlidingWindowTopology::

    >>> from streams.windowing import Count
    >>> class Sum(WindowedBolt):
    ...     def declare_output_fields(self, declarer):
    ...         declarer.declare(["sum"])
    ...     def execute(self, window):
    ...         self.collector.emit([sum(t.get("value") for t in window.get())])
    >>> bolt = Sum().with_window(Count(30), Count(10))
    >>> bolt.window_spec.length, bolt.window_spec.interval
    (Count(n=30), Count(n=10))
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, Self

from typing_extensions import override

from streams.config import TopologyConfig, resolve
from streams.exceptions import FailedException, SquallError, TopologyError
from streams.model.bolt import DelegatingBolt
from streams.model.collector import Anchors, OutputCollector
from streams.model.component import Component, Hold, OutputFieldsDeclarer
from streams.model.context import TopologyContext
from streams.model.tuple import DEFAULT_STREAM, Tuple
from streams.windowing.engine import Firing, WindowEngine
from streams.windowing.exceptions import WindowSpecError
from streams.windowing.spec import Count, Duration, Size, WindowSpec
from streams.windowing.watermark import EventTimeWindows

log = logging.getLogger("squall.windowed")

LATE_FIELDS = ("late_tuple", "timestamp", "watermark")
"""The late stream's fields: the late tuple's values, its timestamp and the watermark it missed (seconds)."""

TICK_KEY = str(TopologyConfig.model_fields["tick_tuple_freq_secs"].alias)
"""The config key of the tick period, the windows' timer."""

MAX_TIMER_S = 1.0
"""A processing-time window's timer ticks at least this often (seconds)."""


class WindowError(SquallError):
    """A window could not be evaluated, or a tuple could not be placed in one (the message names the component and the record)."""


class TupleWindow:
    """The tuples of one window (Storm's ``TupleWindow``).

    ``get()``: the tuples in the window, oldest first; ``get_new()``: those that arrived since
    the previous window; ``get_expired()``: those that left since then (already acked);
    ``start``/``end``: the window's bounds (seconds; event time or ``time.time()``).
    """

    __slots__ = ("end", "expired", "new", "start", "tuples")

    def __init__(self, tuples: list[Tuple], new: list[Tuple], expired: list[Tuple], start: float, end: float) -> None:
        self.tuples = tuples
        self.new = new
        self.expired = expired
        self.start = start
        self.end = end

    def get(self) -> list[Tuple]:
        """The tuples in the window, oldest first."""
        return self.tuples

    def get_new(self) -> list[Tuple]:
        """The tuples that arrived since the previous window."""
        return self.new

    def get_expired(self) -> list[Tuple]:
        """The tuples that left the window since the previous one (acked)."""
        return self.expired

    def __len__(self) -> int:
        return len(self.tuples)

    def __repr__(self) -> str:
        return f"TupleWindow([{self.start}, {self.end}), {len(self.tuples)} tuples, {len(self.new)} new, {len(self.expired)} expired)"


class WindowedBolt(Component):
    """Processes windows of tuples (Storm's ``BaseWindowedBolt``).

    Set the window with :meth:`with_window` or :meth:`with_tumbling_window`; the ``with_*`` methods return the bolt.

    ``self.collector`` (set by ``prepare``) anchors each emit to the window being executed.
    Never ack or fail a window's tuples: the runtime acks them when they expire.
    """

    def with_window(self, length: Size, interval: Size | None = None) -> Self:
        """Sliding windows of ``length`` (``Count(n)`` tuples or ``Duration(seconds)``), one every ``interval`` (default: every tuple)."""
        return self._with(length=length, interval=Count(1) if interval is None else interval)

    def with_tumbling_window(self, length: Size) -> Self:
        """Windows of ``length`` that do not overlap (Storm's ``withTumblingWindow``)."""
        return self._with(length=length, interval=length)

    def with_timestamp_field(self, field: str) -> Self:
        """Event time: the tuples' ``field`` holds their timestamp (seconds since the epoch, int or float)."""
        return self._with(timestamp=field)

    def with_timestamp_extractor(self, extract: Callable[[Tuple], float]) -> Self:
        """Event time: ``extract(tuple)`` returns its timestamp (seconds). It must be picklable (a module-level function)."""
        return self._with(timestamp=extract)

    def with_lag(self, seconds: float) -> Self:
        """Event time: timestamps may be out of order by up to ``seconds`` (Storm's ``withLag``)."""
        return self._with(lag_s=seconds)

    def with_watermark_interval(self, seconds: float) -> Self:
        """Event time: move the watermark every ``seconds`` (default 1)."""
        return self._with(watermark_interval_s=seconds)

    def with_late_tuple_stream(self, stream: str) -> Self:
        """Event time: emit late tuples on ``stream`` (fields :data:`LATE_FIELDS`) instead of only counting them."""
        return self._with(late_stream=stream)

    def with_idle_timeout(self, seconds: float) -> Self:
        """After ``seconds`` without input the stream counts as ended: every window holding tuples fires (a count window partial), and held tuples are acked."""
        return self._with(idle_s=seconds)

    def with_max_tuples(self, n: int) -> Self:
        """Tuples one task may hold (count; default 1,000,000)."""
        return self._with(max_tuples=n)

    def _with(self, **options: Any) -> Self:
        current: dict[str, Any] = dict(getattr(self, "_window_options", None) or {})
        current.update(options)
        self._window_options = current
        return self

    @property
    def window_spec(self) -> WindowSpec:
        """The window the ``with_*`` calls describe. Raises WindowSpecError (no window set, or invalid options)."""
        options: dict[str, Any] = dict(getattr(self, "_window_options", None) or {})
        if "length" not in options:
            raise WindowSpecError("a WindowedBolt needs a window: call with_window(...) or with_tumbling_window(...)")
        return WindowSpec(**options)

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        """Called once per task copy before the first window; ``collector`` anchors to the window."""
        self.collector = collector

    def execute(self, window: TupleWindow) -> None:
        """Process one window; emit through ``self.collector`` (anchored to the window's tuples)."""
        raise NotImplementedError

    def cleanup(self) -> None:
        """Called when the worker stops cleanly (the held tuples are then failed, and replayed)."""


class WindowedOutputCollector:
    """A bolt's collector whose emits default to the current window's tuples as anchors (Storm's ``WindowedOutputCollector``)."""

    __slots__ = ("_collector", "window")

    def __init__(self, collector: OutputCollector) -> None:
        self._collector = collector
        self.window: list[Tuple] = []

    def emit(self, values: list[Any], anchors: Anchors = None, stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit anchored to ``anchors``, by default every tuple of the window being executed."""
        return self._collector.emit(values, anchors=self.window if anchors is None else anchors, stream=stream)

    def emit_direct(self, task: int, values: list[Any], anchors: Anchors = None, stream: str = DEFAULT_STREAM) -> None:
        """Emit to one global ``task`` on a direct stream, anchored as :meth:`emit`."""
        self._collector.emit_direct(task, values, anchors=self.window if anchors is None else anchors, stream=stream)

    def ack(self, tuple: Tuple) -> None:  # noqa: A002
        """Ack ``tuple`` (a window's tuples are acked by the runtime when they expire)."""
        self._collector.ack(tuple)

    def fail(self, tuple: Tuple, reason: str | None = None) -> None:  # noqa: A002
        """Fail ``tuple``: its tree is replayed (``reason``: see :meth:`OutputCollector.fail`)."""
        self._collector.fail(tuple, reason)

    def report_error(self, error: BaseException | str, tuple: Tuple | None = None) -> None:  # noqa: A002
        """Record ``error`` as the component's error (Storm's ``reportError``)."""
        self._collector.report_error(error, tuple)

    def reset_timeout(self, tuple: Tuple) -> None:  # noqa: A002
        """Restart the timeout of ``tuple``'s trees."""
        self._collector.reset_timeout(tuple)


class WindowedBoltExecutor(DelegatingBolt):
    """Runs a :class:`WindowedBolt` as a :class:`Bolt` (Storm's ``WindowedBoltExecutor``).

    It holds tuples in windows, fires them, acks what expired, sends late tuples on.

    Args:
      inner: the user's bolt (its window set).
      clock: processing time (seconds since the epoch; ``time.time``).
    """

    def __init__(self, inner: WindowedBolt, clock: Callable[[], float] = time.time) -> None:
        super().__init__(inner)
        self.inner: WindowedBolt = inner
        self.clock = clock
        self.component = "?"
        self.spec: WindowSpec | None = None
        self.windows: WindowEngine[Tuple] | EventTimeWindows[Tuple] | None = None
        self.out: WindowedOutputCollector | None = None
        self.refused = 0
        """Tuples failed because the task held ``max_tuples`` (count)."""
        self.last_arrival = 0.0
        """Processing time of the last input tuple (seconds; processing-time windows' idle check)."""

    # -- topology time -----------------------------------------------------------------------------
    @override
    def validate(self, component_id: str) -> None:
        self.component = component_id
        super().validate(component_id)
        try:
            self.spec = self.inner.window_spec
        except WindowSpecError as exc:
            raise TopologyError(f"[{component_id}] {exc}") from None
        declarer = OutputFieldsDeclarer(component_id)
        self.inner.declare_output_fields(declarer)
        if self.spec.late_stream is not None and self.spec.late_stream in declarer.streams:
            raise TopologyError(f"[{component_id}] the late tuple stream {self.spec.late_stream!r} is declared by the bolt too")

    def validate_conf(self, component_id: str, conf: TopologyConfig) -> None:
        """Storm's check: tuples held up to the window's length plus its interval must not time out first.

        Raises TopologyError naming the component, both values and what to change.
        """
        spec = self._spec()
        if spec.hold_s and conf.ackers and conf.message_timeout_secs <= spec.hold_s:
            raise TopologyError(
                f"[{component_id}] its window holds tuples up to {spec.hold_s:g} s (length + interval"
                + (" + lag + watermark interval" if spec.event_time else "")
                + f") but topology.message.timeout.secs is {conf.message_timeout_secs:g} s: they would time out and be replayed; "
                "set the timeout above that"
            )

    @override
    def hold(self) -> Hold:
        spec = self._spec()
        return Hold(spec.hold_count, spec.hold_s, spec.event_time)

    @override
    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.inner.declare_output_fields(declarer)
        late = self._spec().late_stream
        if late is not None:
            declarer.declare_stream(late, list(LATE_FIELDS))

    @override
    def get_component_configuration(self) -> dict[str, Any] | None:
        conf = dict(self.inner.get_component_configuration() or {})
        user = resolve(conf, where=self.component).tick_tuple_freq_secs
        timer = self.timer_s() if user is None else min(user, self.timer_s())
        conf[TICK_KEY] = timer  # the windows' timer (a tick the bolt asked for too, if sooner)
        return conf

    def timer_s(self) -> float:
        """How often the windows are checked without input (seconds): the watermark interval, or the interval (at most 1 s)."""
        spec = self._spec()
        if spec.event_time:
            return spec.watermark_interval_s
        if isinstance(spec.interval, Duration):
            return min(MAX_TIMER_S, spec.interval.seconds)
        return MAX_TIMER_S

    def _spec(self) -> WindowSpec:
        if self.spec is None:
            self.spec = self.inner.window_spec
        return self.spec

    # -- run time --------------------------------------------------------------------------------
    @override
    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        spec = self._spec()
        self.component = context.this_component_id
        self.collector = collector
        self.windows = EventTimeWindows(spec) if spec.event_time else WindowEngine(spec)
        if isinstance(self.windows, EventTimeWindows):  # the watermark waits for every input (a join's two sides)
            inputs = context.topology.components[self.component].inputs
            self.windows.expect([f"{s.component}/{s.stream}" for s in inputs if not s.stream.startswith("__")], self.clock())
        self.out = self._output_collector(collector)
        context.register_metric("window_late", lambda: float(self.late_count))
        context.register_metric("window_refused", lambda: float(self.refused))
        self.inner.prepare(conf, context, self.out)

    def _output_collector(self, collector: OutputCollector) -> WindowedOutputCollector:
        """The collector the bolt emits through: anchored to the window being executed."""
        return WindowedOutputCollector(collector)

    @property
    def late_count(self) -> int:
        """Late tuples so far (count)."""
        return self.windows.late if isinstance(self.windows, EventTimeWindows) else 0

    @override
    def execute(self, tuple: Tuple) -> None:
        windows = self.windows
        assert windows is not None
        now = self.clock()
        spec = self._spec()
        if tuple.is_tick:
            if isinstance(windows, EventTimeWindows):
                self._fire(windows.tick(now))
                return
            fired = windows.advance(now)
            if self._idle(spec, now) and len(windows):
                fired += windows.flush()  # the stream ended: the last count window fires, held tuples are acked
            self._fire(fired)
            return
        self.last_arrival = now
        if len(windows) >= spec.max_tuples:
            self.refused += 1
            if self.refused == 1 or not self.refused % 10_000:
                log.warning("[%s] window holds %d tuples (max_tuples): failing new ones (%d so far)", self.component, len(windows), self.refused)
            self.collector.fail(tuple)
            return
        if isinstance(windows, EventTimeWindows):
            ts = self._timestamp(tuple)
            source, stream = tuple.source_component, tuple.stream
            if windows.add(f"{source}:{tuple.source_task}/{stream}", ts, tuple, now, f"{source}/{stream}"):
                self._held(tuple)
            else:
                self._late(tuple, ts, windows.watermark)
            return
        fired = windows.add(now, tuple)
        self._held(tuple)
        self._fire(fired)

    def _held(self, tuple: Tuple) -> None:  # noqa: A002
        """``tuple`` is in the windows now (acked when it expires; a persistent window overrides this)."""

    def _idle(self, spec: WindowSpec, now: float) -> bool:
        """Processing time: no input for ``idle_s``, and windows that the timer alone does not empty (a Count length or interval)."""
        if spec.idle_s is None or now - self.last_arrival < spec.idle_s:
            return False
        return isinstance(spec.length, Count) or isinstance(spec.interval, Count)

    def _timestamp(self, tuple: Tuple) -> float:  # noqa: A002
        stamp = self._spec().timestamp
        try:
            ts = stamp(tuple) if callable(stamp) else tuple.get(str(stamp))
            return float(ts)
        except (KeyError, TypeError, ValueError) as exc:
            raise WindowError(f"[{self.component}] no event time in the tuple from {tuple.source_component} at {tuple.where}: {exc}") from exc

    def _late(self, tuple: Tuple, ts: float, watermark: float) -> None:  # noqa: A002
        stream = self._spec().late_stream
        if stream is not None:
            self.collector.emit([list(tuple.values), ts, watermark], anchors=tuple, stream=stream)
        else:
            log.debug("[%s] late tuple at %s (timestamp %s < watermark %s) acked", self.component, tuple.where, ts, watermark)
        self.collector.ack(tuple)

    def _fire(self, firings: Sequence[Firing[Tuple]]) -> None:
        """Execute each window, then ack what expired (a tuple may be in several of them).

        A window whose ``execute`` raises fails its tuples and those of the windows after it
        in this step (not executed): they are replayed. FailedException is quiet; any other
        exception is raised again as WindowError, which the executor logs and counts.
        """
        out = self.out
        windows = self.windows
        assert out is not None and windows is not None
        for i, f in enumerate(firings):
            out.window = f.tuples
            try:
                self.inner.execute(TupleWindow(f.tuples, f.new, f.expired, f.start, f.end))
            except Exception as exc:
                if not self._window_failed(firings[i:], exc):
                    break
                raise WindowError(f"[{self.component}] execute of window [{f.start}, {f.end}) with {len(f.tuples)} tuples failed: {exc!r}") from exc
            finally:
                out.window = []
        self._expire(windows.take_expired())

    def _window_failed(self, rest: Sequence[Firing[Tuple]], exc: Exception) -> bool:
        """A window's ``execute`` raised ``exc``: fail the tuples of it and of the windows after it; True to raise WindowError."""
        for f in rest:
            for t in f.tuples:
                self.collector.fail(t)
        return not isinstance(exc, FailedException)

    def _expire(self, tuples: list[Tuple]) -> None:
        """Tuples that left every window: acked (ignored for one failed above)."""
        for t in tuples:
            self.collector.ack(t)

    @override
    def cleanup(self) -> None:
        try:
            self.inner.cleanup()
        finally:
            if self.windows is not None:
                for t in list(self.windows.held()):
                    self.collector.fail(t)  # replayed now to the task's next owner, not after the timeout
