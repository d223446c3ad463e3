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


def table_put(table: Any, partition: int, key: bytes, value: bytes | None) -> None:
    """Set ``table[key]`` and write its changelog record to ``partition`` explicitly."""
    if value is None:
        table.data.pop(key, None)
    else:
        table.data[key] = value
    table.send_changelog(partition, key, value)


def committed_offsets(app: Any, topic: str) -> dict[int, int]:
    """Input offsets faust has committed for ``topic``, per partition."""
    committed = getattr(app.consumer, "_committed_offset", {}) or {}
    return {tp.partition: off for tp, off in committed.items() if tp.topic == topic and off is not None}
