"""The faust acker's Table keeps no copy of the ledger (acker.faust_compat, workaround 5)."""

from __future__ import annotations

from typing import Any

import faust

from acker import faust_compat
from acker.faust_store import LedgerStore


class _Event:
    def __init__(self, key: bytes, value: bytes | None) -> None:
        self.key, self.value = key, value
        self.message = type("Message", (), {"partition": 0, "value": value})()


def test_the_acker_table_uses_the_ledger_store_and_recovery_keeps_nothing() -> None:
    faust_compat.register_ledger_store()
    app = faust.App("squall-test-ledger-store", broker="kafka://127.0.0.1:1", web_enabled=False)
    table = app.Table("acker", partitions=2, key_type=bytes, value_type=bytes, store=faust_compat.LEDGER_STORE)
    assert isinstance(table.data, LedgerStore)
    table.data.apply_changelog_batch([_Event(b"k%d" % i, b"[5,0,1.0,%d]" % i) for i in range(100)], lambda k: k, lambda v: v)
    assert len(table.data) == 0 and dict(table.data.data) == {}


def test_table_put_sends_the_record_and_keeps_no_copy() -> None:
    sent: list[tuple[int, bytes, bytes | None]] = []

    class Table:
        data: dict[bytes, Any] = {}

        def send_changelog(self, partition: int, key: bytes, value: bytes | None) -> None:
            sent.append((partition, key, value))

    table = Table()
    faust_compat.table_put(table, 3, b"root0001", b"[5,0,1.0,7]")
    faust_compat.table_put(table, 3, b"root0001", None)
    assert sent == [(3, b"root0001", b"[5,0,1.0,7]"), (3, b"root0001", None)]
    assert table.data == {}
