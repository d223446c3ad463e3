"""The tuple a bolt receives (Storm's ``Tuple``/``TupleImpl``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

DEFAULT_STREAM = "default"
"""The stream an emit goes to when it names none (Storm's ``Utils.DEFAULT_STREAM_ID``)."""

SYSTEM_COMPONENT = "__system"
"""The source component of tick tuples (Storm's ``Constants.SYSTEM_COMPONENT_ID``)."""

TICK_STREAM = "__tick"
"""The stream of tick tuples (``topology.tick.tuple.freq.secs``)."""


class Tuple:
    """One input tuple.

    Shapes:
      * ``values`` -- list of JSON-serialisable values, one per declared field.
      * ``fields`` -- the declared field names of ``(source_component, stream)``.
      * ``anchors`` -- Storm's ``anchors_to_ids``: ``{root_id: edge_id}``, 64-bit ints.
        Empty for an untracked tuple (no message id, unanchored emit, or 0 ackers).
      * ``ack_val`` -- XOR of the edge ids of every tuple emitted anchored to this one
        (Storm's ``TupleImpl.updateAckVal``); folded into the ack sent for each root.
      * ``topic``/``partition``/``offset`` -- where the record was read, for errors.
      * ``settled`` -- True once the tuple was acked *or* failed.
      * ``batch`` -- ``(txid, attempt)`` in a transactional topology (:mod:`streams.model.batch`),
        else None; ``epoch`` -- the sending task's life (its worker's claim epoch, ms;
        :mod:`streams.runtime.fencing`).
      * ``received_at`` -- ``time.perf_counter()`` when the executor read it (process latency).
      * ``tid`` -- in a topology with a stateful bolt, ``(source, offset, path)``: the same on
        every replay (:mod:`streams.state.keyvalue`), else None; ``emits`` -- emits anchored to
        it so far (its children's paths).
      * ``traced`` -- with ``topology.debug``, True when a tree it belongs to is sampled
        (decided once, when the executor reads it: its execute, ack and fail then check this
        flag instead of its roots; :mod:`streams.monitoring.trace`).
    """

    __slots__ = (
        "_index",
        "ack_val",
        "anchors",
        "batch",
        "emits",
        "epoch",
        "offset",
        "partition",
        "received_at",
        "settled",
        "source_component",
        "source_task",
        "stream",
        "tid",
        "topic",
        "traced",
        "values",
    )

    def __init__(
        self,
        values: list[Any],
        stream: str,
        source_component: str,
        source_task: int,
        anchors: dict[int, int],
        index: Mapping[str, int],
        topic: str = "",
        partition: int = -1,
        offset: int = -1,
        batch: tuple[int, int] | None = None,
        epoch: int = 0,
    ) -> None:
        self.values = values
        self.stream = stream
        self.source_component = source_component
        self.source_task = source_task
        self.anchors = anchors
        self.ack_val = 0
        self._index = index
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.settled = False  # acked or failed: a second ack or fail is ignored
        self.batch = batch
        self.epoch = epoch  # the sending task's life (streams.runtime.fencing)
        self.received_at = 0.0  # time.perf_counter() when the executor read it (0: unknown)
        self.tid: tuple[int, int, int] | None = None
        self.emits = 0
        self.traced = False  # set on receipt when a tree it belongs to is sampled (streams.monitoring.trace)

    @property
    def fields(self) -> Sequence[str]:
        """The declared field names of the source's stream."""
        return tuple(self._index)

    def __getitem__(self, i: int) -> Any:
        return self.values[i]

    def __len__(self) -> int:
        return len(self.values)

    def get(self, field: str) -> Any:
        """The value of ``field``. Raises ``KeyError`` naming the field and the source."""
        try:
            return self.values[self._index[field]]
        except KeyError:
            raise KeyError(f"field {field!r} not declared by {self.source_component!r} on stream {self.stream!r}") from None

    def value_by_field(self, field: str) -> Any:  # Storm spelling
        """The value of ``field`` (Storm's ``getValueByField``); see :meth:`get`."""
        return self.get(field)

    @property
    def is_tick(self) -> bool:
        """True for a tick tuple (``topology.tick.tuple.freq.secs``)."""
        return self.source_component == SYSTEM_COMPONENT and self.stream == TICK_STREAM

    @property
    def where(self) -> str:
        """``topic[partition]@offset`` of the record it was read from, for error messages."""
        return f"{self.topic}[{self.partition}]@{self.offset}"

    def __repr__(self) -> str:
        return f"Tuple(source={self.source_component}:{self.source_task}, stream={self.stream}, values={self.values!r}, at={self.where})"


def tick_tuple() -> Tuple:
    """A tick tuple (Storm's ``TupleUtils.isTick``): no values, no anchors, never acked."""
    return Tuple([], TICK_STREAM, SYSTEM_COMPONENT, -1, {}, {})
