"""Trident's state for exactly-once batches: ``key -> (txid, value)`` or ``key -> (txid, prev, curr)``, on SQLite (embedded, on disk) or PostgreSQL.

A committer bolt applies each batch's updates in one database transaction together with the
last committed txid (:meth:`State.apply`). Which semantics to choose:

* :class:`TransactionalState` when a txid always replays the same tuples (a transactional
  spout): an update whose txid equals the stored one is skipped.
* :class:`OpaqueState` when a replayed txid may carry other tuples (an opaque spout): it
  keeps the value before the txid, so a replay recomputes from it.
* :class:`NonTransactionalState` for comparison only: it counts a replayed batch twice.

>>> state = TransactionalState(open_backend("memory://"), "counts")
>>> state.apply(1, [("the", 2), ("a", 1), ("the", 1)]).written
2
>>> state.apply(1, [("the", 3), ("a", 1)]).skipped  # txid 1 replayed: already applied
2
>>> state.get("the"), state.last_txid()
(3, 1)
"""

from streams.state.backend import StateBackend
from streams.state.semantics import ApplyResult, NonTransactionalState, OpaqueState, State, TransactionalState
from streams.state.stores import OpenedStores, open_backend

__all__ = ["ApplyResult", "NonTransactionalState", "OpaqueState", "OpenedStores", "State", "StateBackend", "TransactionalState", "open_backend"]
