"""The spout side of tracking: trees in flight per spout task, in emit order.

Storm's ``SpoutExecutor`` keeps ``pending: RotatingMap<root, TupleInfo>`` and fails a tree
itself when it times out; this is that map, pure (no I/O) and with an injected clock.
It also bounds trees in flight per task for ``topology.max.spout.pending``.

    >>> clock = iter([0.0, 1.0, 40.0]).__next__
    >>> trees = InFlightTrees(clock)
    >>> trees.track(root=11, task_id=0, msg_id=("t", 0, 5))   # emitted at 0.0
    >>> trees.track(root=12, task_id=0, msg_id=("t", 0, 6))   # emitted at 1.0
    >>> trees.settle(11).msg_id, trees.settle(11), trees.ignored
    (('t', 0, 5), None, 1)
    >>> [t.msg_id for t in trees.expired(timeout_s=30.0)]       # now 40.0
    [('t', 0, 6)]
    >>> trees.pending(0), len(trees), trees.message_ids()
    (0, 0, 0)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class InFlight:
    """One tracked tree.

    Its root id, the spout task that emitted it, the spout's message id, the emit time
    (seconds on the map's clock), its weight: the message ids it carries (1, or the
    records of a :class:`streams.kafka.source.KafkaRecordsId`), and when its timeout
    started (the emit, or the last reset: ``collector.reset_timeout``).
    """

    root: int
    task_id: int
    msg_id: Any
    emitted_at: float
    weight: int = 1
    timeout_from: float = 0.0


class InFlightTrees:
    """``root -> InFlight`` in emit order, with a count per spout task.

    Args:
      clock: seconds (monotonic); injectable for tests.
    Not thread-safe: one per spout executor, used from its thread.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._trees: dict[int, InFlight] = {}
        self._per_task: dict[int, int] = {}
        self.ignored = 0
        """Outcomes for roots not in flight: a second completion after a crash, or a
        result for a task this executor no longer owns."""

    def __len__(self) -> int:
        return len(self._trees)

    def pending(self, task_id: int) -> int:
        """Message ids in flight emitted by ``task_id``.

        The sum of its trees' weights: what ``topology.max.spout.pending`` bounds, as Storm's
        pending tuples.
        """
        return self._per_task.get(task_id, 0)

    def message_ids(self) -> int:
        """Message ids in flight over every task (what the ``squall_pending`` gauge shows)."""
        return sum(self._per_task.values())

    def track(self, root: int, task_id: int, msg_id: Any, weight: int = 1) -> None:
        """Start tracking a tree emitted now that carries ``weight`` message ids."""
        now = self.clock()
        self._trees[root] = InFlight(root, task_id, msg_id, now, weight, now)
        self._per_task[task_id] = self._per_task.get(task_id, 0) + weight

    def settle(self, root: int) -> InFlight | None:
        """Stop tracking ``root`` (its outcome arrived).

        ``None`` (and counted in :attr:`ignored`) if it is not in flight.
        """
        tree = self._trees.pop(root, None)
        if tree is None:
            self.ignored += 1
            return None
        self._per_task[tree.task_id] -= tree.weight
        return tree

    def reset(self, root: int) -> bool:
        """Restart ``root``'s timeout now; False if it is not in flight.

        A bolt called ``reset_timeout`` (Storm's spout executor re-puts the tuple into its pending map).
        """
        tree = self._trees.pop(root, None)
        if tree is None:
            return False
        tree.timeout_from = self.clock()
        self._trees[root] = tree  # to the end: the map stays in timeout order
        return True

    def drop_task(self, task_id: int) -> list[InFlight]:
        """Forget every tree of ``task_id`` (the task died: its next life does not know them); returns them."""
        gone = [t for t in self._trees.values() if t.task_id == task_id]
        for tree in gone:
            del self._trees[tree.root]
        self._per_task[task_id] = 0
        return gone

    def oldest_age(self) -> float:
        """Seconds since the timeout of the tree in flight longest started (0 if none)."""
        if not self._trees:
            return 0.0
        return self.clock() - next(iter(self._trees.values())).timeout_from

    def expired(self, timeout_s: float) -> list[InFlight]:
        """Remove and return every tree whose timeout started ``timeout_s`` or more seconds ago, oldest first.

        Storm's spout-side ``topology.message.timeout.secs``.
        """
        deadline = self.clock() - timeout_s
        trees = self._trees
        out: list[InFlight] = []
        while trees:
            tree = next(iter(trees.values()))
            if tree.timeout_from > deadline:
                break
            del trees[tree.root]
            self._per_task[tree.task_id] -= tree.weight
            out.append(tree)
        return out
