"""The faust acker's table store: one that keeps nothing (:mod:`acker.faust_compat`, workaround 5).

Its own module so that only faust's store registry imports faust for it
(:func:`acker.faust_compat.register_ledger_store`).
"""

from __future__ import annotations

from typing import Any

from faust.stores import memory


class LedgerStore(memory.Store[bytes, bytes]):
    """A faust table store that keeps nothing: the acker's ledger holds the state.

    faust's recovery hands it the changelog in batches; they are dropped, because the ledger
    has read the same records itself (:func:`acker.runtime_native.restore_partition`). Writes
    never reach it: :func:`acker.faust_compat.table_put` only sends the changelog record.
    """

    def apply_changelog_batch(self, batch: Any, to_key: Any, to_value: Any) -> None:
        """Drop a recovered batch: the ledger restored these records already."""
        for _event in batch:
            pass
