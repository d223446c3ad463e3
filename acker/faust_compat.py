"""Every faust-streaming workaround Squall needs, in one place (faust-streaming 0.15).

1. **Fetch wait.** faust hard-codes ``fetch_max_wait_ms=1500`` for its worker consumer;
   the embedded broker always waits the full fetch wait, so every hop would cost 1.5 s.
   :func:`patch_fetch_wait` swaps in a consumer class that uses
   ``squall.kafka.fetch.wait.max.ms`` (50 ms) instead.
2. **Restore to the true end (gap tracking).** faust's table recovery stops at the end
   offset from ListOffsets, which the embedded broker can under-report. The acker
   therefore rebuilds its ledger with :func:`acker.runtime_native.restore_partition`,
   which reads to the high watermark of a Fetch response, for each assigned partition.
3. **Partition pinning in batches.** ``table[key] = value`` writes the changelog to the
   partition of the *current event*; a batch from ``take_events`` spans partitions. So
   changelog records are written with :func:`table_put`, which names the partition.
4. **Committed offsets.** Done records may only be tombstoned once the input offset is
   committed; :func:`committed_offsets` reads them from faust's consumer.
5. **No second copy of the ledger.** The ledger (:class:`acker.durable.DurableLedger`) is the
   table's state, and it restores itself (2.). faust's memory store kept every changelog
   value in a dict as well, read by nothing: 4,243 bytes per pending tree with orjson's
   buffers, about 200 with exact ones, against the ledger's 36. The Table therefore uses
   :class:`acker.faust_store.LedgerStore` (``store=LEDGER_STORE``), which keeps nothing, and :func:`table_put`
   only writes the changelog record.
"""

from __future__ import annotations

from typing import Any

_patched = False


def patch_fetch_wait(fetch_wait_ms: int) -> None:
    """Make faust's aiokafka consumers use ``fetch_wait_ms`` instead of 1500 ms."""
    global _patched
    if _patched:
        return
    import aiokafka
    from faust.transport.drivers import aiokafka as driver

    base = aiokafka.AIOKafkaConsumer

    class Consumer(base):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["fetch_max_wait_ms"] = fetch_wait_ms
            super().__init__(*args, **kwargs)

    driver.aiokafka.AIOKafkaConsumer = Consumer  # type: ignore[attr-defined]
    _patched = True


LEDGER_STORE = "squall-ledger://acker"
"""The Table's store URL: :class:`acker.faust_store.LedgerStore` (workaround 5), registered by :func:`register_ledger_store`.

It has a host part: yarl's ``URL("squall-ledger://")`` is falsy, and faust then falls back to the app's store."""


def register_ledger_store() -> None:
    """Make ``squall-ledger://`` name :class:`acker.faust_store.LedgerStore` in faust's store registry."""
    import faust.stores

    faust.stores.STORES.aliases["squall-ledger"] = "acker.faust_store:LedgerStore"


def table_put(table: Any, partition: int, key: bytes, value: bytes | None) -> None:
    """Write ``key``'s changelog record (``None``: a tombstone) to ``partition`` explicitly.

    The Table's store keeps no copy (workaround 5): the ledger is the state.
    """
    table.send_changelog(partition, key, value)


def committed_offsets(app: Any, topic: str) -> dict[int, int]:
    """Input offsets faust has committed for ``topic``, per partition."""
    committed = getattr(app.consumer, "_committed_offset", {}) or {}
    return {tp.partition: off for tp, off in committed.items() if tp.topic == topic and off is not None}
