"""Storm's acker on Kafka: a pure XOR ledger (:mod:`acker.ledger`) and its runtimes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from acker.ledger import Ledger, Outcome
from streams.lazy import lazy_exports

if TYPE_CHECKING:
    from acker.common import record_outcomes
    from acker.durable import DurableLedger
    from acker.faust_compat import patch_fetch_wait, table_put
    from acker.runtime_native import AckerExecutor

__all__ = ["AckerExecutor", "DurableLedger", "Ledger", "Outcome", "patch_fetch_wait", "record_outcomes", "table_put"]

__getattr__ = lazy_exports(
    __name__,
    {
        "DurableLedger": "acker.durable",
        "record_outcomes": "acker.common",
        "AckerExecutor": "acker.runtime_native",
        "patch_fetch_wait": "acker.faust_compat",
        "table_put": "acker.faust_compat",
    },
)
