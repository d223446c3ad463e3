"""The Stream API's graph: one :class:`Node` per operation, as the user wrote them (Storm's ``streams/Node`` and ``ProcessorNode``).

Pure data: :mod:`streams.api.stream` adds nodes, :mod:`streams.api.compiler` turns them into
bolts. A node's ``kind`` is a stateless operation (:data:`streams.api.chain.STATELESS`), a
pass-through (``pass`` for ``window``, ``arm`` for a branch's arm), an operation that starts a
bolt (``repartition``, ``aggregate``, ``window``, ``join``, ``cogroup``, ``state``,
``state_query``), ``spout``, ``to`` (the user's own bolt) or ``output``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from streams.api.chain import STATELESS
from streams.api.windows import Window

KEEPS_WINDOW = (*STATELESS, "arm", "pass", "repartition")
"""Operations after which the stream keeps a pending window (the next aggregation or join uses it)."""


@dataclass(eq=False)
class Node:
    """One operation of a stream graph.

    Attributes:
      kind: what it is (module docstring).
      name: the operation as the user called it (``count_by_key``), for errors and component ids.
      parents: the streams it reads (two for a join or a cogroup; the queries for ``state_query``).
      pair: its output is a :class:`~streams.api.stream.PairStream` (``(key, value)`` values).
      parallelism: executors of the bolt it starts (inherited by the operations fused after it).
      window: the window set on the stream, applied by the next aggregation or join (which
        keeps it in ``args["window"]``; the stream after it has none).
      args: the operation's arguments (functions, aggregator, join kind, the user's bolt...).
      branch: for an arm of ``branch``, its index (the node itself is the branch step).
    """

    kind: str
    name: str
    parents: list[Node]
    pair: bool
    parallelism: int
    window: Window | None = None
    args: dict[str, Any] = field(default_factory=dict)
    branch: int | None = None
