"""Committer SparkBolts.

The micro-batch id is the txid, and the state is Squall's txid-aware state
(:mod:`streams.state`, the same implementation committer bolts use).

Storm's transactional topologies (and Trident's transactional state) store
``key -> (txid, value)``: applying batch ``txid`` to a key whose stored txid is already
``txid`` is skipped, because that batch's update is already in the value. Spark runs
micro-batches' tasks in parallel but commits them one at a time in batch-id order, so a
SparkBolt with a :class:`SparkCommitter` gets Storm's two phases for free: processing in
parallel, commits in strict txid order. After a crash Spark re-runs the last uncommitted
batch with the *same* id and the same offsets, so its state write is skipped.

Example::

    >>> from streams.state import TransactionalState, open_backend
    >>> c = SparkCommitter(TransactionalState(open_backend("memory://"), "wc.counts"))
    >>> c.commit(1, c.fold([("a", 1), ("a", 2)])).written, c.commit(1, c.fold([("a", 3)])).skipped
    (1, 1)
    >>> c.state.get("a")
    3
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from streams.state import ApplyResult, State


class SparkCommitter:
    """Makes a SparkBolt a committer bolt (Storm's ``ICommitter``).

    The bolt's function returns ``[key, delta]`` items instead of tuples to emit. Deltas
    are combined per key with the state's ``combine`` in the tasks, then once more on the
    driver, which applies them to ``state`` with txid = the micro-batch id *before* it
    acks the batch's tuples. Use a :class:`~streams.state.TransactionalState`: a re-run
    micro-batch carries the same records.
    """

    def __init__(self, state: State) -> None:
        self.state = state
        self.combine = state.combine

    def fold(self, updates: Iterable[tuple[Any, Any]]) -> dict[str, Any]:
        """Combine ``(key, delta)`` pairs per key (keys in the state's stored form)."""
        return self.state.fold(updates)

    def commit(self, txid: int, folded: dict[str, Any]) -> ApplyResult:
        """Apply one micro-batch's folded updates as batch ``txid`` (one DB transaction)."""
        return self.state.apply_folded(txid, folded)
