"""What the read-only verbs read from a topology's topics: status, errors, traces, dead letters, logs and live rates.

Storm's counterparts are ``storm list``/``monitor``/``get-errors`` and the UI's read paths
(``Nimbus.getTopologyInfo``). Everything here is read on demand from Kafka; nothing here writes
the control record (that is :mod:`service.control.client`), except ``squall dlq replay``, which
writes a dead letter back to its source topic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streams.lazy import lazy_exports

if TYPE_CHECKING:
    from service.query.errors import read_errors
    from service.query.trace import read_trees

__all__ = ["read_errors", "read_trees"]

__getattr__ = lazy_exports(
    __name__,
    {
        "read_trees": "service.query.trace",
        "read_errors": "service.query.errors",
    },
)
