"""Flushes that do not stall an executor: outputs in generations, each released once delivered.

A bolt acks a tuple only after the outputs it emitted are durable (:mod:`streams.runtime.executor`):
a tree must never complete while one of its records may still be lost. The executor used to
make that so by flushing its producer and waiting: every ``squall.flush.interval.secs`` it
stopped executing for a round trip to the broker (``acks=all``). On Apache Kafka that wait was
the bolt's idle time: the word count's split executor spent 16% of its samples in it, and no
worker of the topology was busier than 45% of a core at full speed.

Now the records an executor produces between two flushes form a *generation*. A flush seals
the current one with what its delivery releases (the executor's buffered acker ops and each
task's input position) and goes on executing; every record of the next generation is
produced into a new one. Each record's delivery report (success or failure) counts down its
own generation, so a generation is delivered when every record produced into it was
reported, whatever the order of reports across partitions. Generations are released in the
order they were sealed, and only once every earlier one was: a release therefore comes after
every record produced before its seal was reported, which is what the synchronous flush
guaranteed. The output collector's contract is unchanged (Storm's ``BoltOutputCollectorImpl``
sends ``__ack_ack`` after ``transfer``; here after the transfer is durable).

Records produced outside :func:`~streams.kafka.clients.produce_fn` (diagnostics with their own
callback) are not tracked. At most ``max_pending`` sealed generations wait; the executor then
waits for the oldest (a broker that is slow or down sets the pace, as before).

    >>> from streams.runtime.flush_pipeline import FlushPipeline
    >>> pipe = FlushPipeline[str]()
    >>> first = pipe.current
    >>> first.produced()                 # a record produced into generation 1
    >>> pipe.seal("acks of flush 1")     # sealed; generation 2 is open
    >>> pipe.current.produced()
    >>> pipe.seal("acks of flush 2")
    >>> pipe.current(None, None)         # a report for generation 3 (nothing waits on it)
    >>> [g.payload for g in pipe.delivered()]    # 1 is not reported yet, so 2 waits too
    []
    >>> first(None, None)                # generation 1's record is reported
    >>> pipe.pending[1](None, None)      # and generation 2's
    >>> [g.payload for g in pipe.delivered()]
    ['acks of flush 1', 'acks of flush 2']
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any, Generic, TypeVar

P = TypeVar("P")

DeliveryCallback = Callable[[Any, Any], None]
"""librdkafka's delivery report callback, ``(err, msg)``."""

MAX_PENDING_GENERATIONS = 4
"""Sealed generations an executor lets wait for delivery before it waits for the oldest."""


class FlushGeneration(Generic[P]):
    """The records produced between two flushes; the delivery callback of each of them.

    ``outstanding``: records produced and not yet reported; ``failures``: reports with an
    error; ``payload``: what its delivery releases (set at the seal; None while open).
    ``on_failure`` (the producer's :class:`~streams.kafka.clients.DeliveryTracker`) sees every
    failed report, so an executor's delivery failures are counted and logged as before.
    """

    __slots__ = ("failures", "on_failure", "outstanding", "payload", "records")

    def __init__(self, on_failure: DeliveryCallback | None = None) -> None:
        self.outstanding = 0
        self.records = 0
        """Records produced into it (count)."""
        self.failures = 0
        self.payload: P | None = None
        self.on_failure = on_failure

    def produced(self) -> None:
        """Count one record produced into this generation (its report is still to come)."""
        self.outstanding += 1
        self.records += 1

    def __call__(self, err: Any, msg: Any) -> None:
        """The delivery report of one of its records (librdkafka's ``on_delivery``)."""
        self.outstanding -= 1
        if err is not None:
            self.failures += 1
            if self.on_failure is not None:
                self.on_failure(err, msg)


class FlushPipeline(Generic[P]):
    """The open generation and the sealed ones waiting for their delivery, oldest first.

    ``on_failure``: given every failed delivery report (see :class:`FlushGeneration`);
    ``max_pending``: how many sealed generations may wait (:attr:`full`).
    """

    def __init__(self, on_failure: DeliveryCallback | None = None, max_pending: int = MAX_PENDING_GENERATIONS) -> None:
        if max_pending < 1:
            raise ValueError(f"max_pending must be at least 1, not {max_pending}")
        self.on_failure = on_failure
        self.max_pending = max_pending
        self.current: FlushGeneration[P] = FlushGeneration(on_failure)
        """The open generation: every tracked record produced now belongs to it."""
        self.pending: deque[FlushGeneration[P]] = deque()
        """Sealed generations not yet released, in the order they were sealed."""

    def seal(self, payload: P) -> None:
        """Close the open generation with ``payload`` (released once it and every earlier one are delivered); open the next."""
        gen = self.current
        gen.payload = payload
        self.pending.append(gen)
        self.current = FlushGeneration(self.on_failure)

    def delivered(self) -> list[FlushGeneration[P]]:
        """Take the sealed generations whose records, and every earlier one's, were all reported (oldest first)."""
        pending = self.pending
        out: list[FlushGeneration[P]] = []
        while pending and pending[0].outstanding <= 0:
            out.append(pending.popleft())
        return out

    def oldest_delivered(self) -> bool:
        """No sealed generation waits, or the oldest one's records were all reported."""
        return not self.pending or self.pending[0].outstanding <= 0

    @property
    def full(self) -> bool:
        """As many sealed generations wait as may: the executor waits for the oldest before it goes on."""
        return len(self.pending) >= self.max_pending

    @property
    def waiting(self) -> bool:
        """A sealed generation waits for its delivery."""
        return bool(self.pending)
