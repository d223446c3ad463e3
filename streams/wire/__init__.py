"""The bytes on Kafka: what every Squall process writes and reads.

The tuple envelope (:mod:`streams.wire.codec`), acker ops and results
(:mod:`streams.wire.acker`), dead-letter headers (:mod:`streams.wire.dead_letter`), topic
and group names (:mod:`streams.wire.naming`) and 64-bit ids (:mod:`streams.wire.ids`).
Each message has a JSON Schema in ``schemas/``. This layer imports only
:mod:`streams.exceptions` and :mod:`streams.config` (see docs/design.md, "Layers").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streams.lazy import lazy_exports

if TYPE_CHECKING:
    from streams.wire.acker import OP_ACK, OP_INIT, RESULT_ACK, decode_list, encode_ops
    from streams.wire.naming import ACKER_COMPONENT, ack_result_topic, acker_topic, component_group

__all__ = ["ACKER_COMPONENT", "OP_ACK", "OP_INIT", "RESULT_ACK", "ack_result_topic", "acker_topic", "component_group", "decode_list", "encode_ops"]

__getattr__ = lazy_exports(
    __name__,
    {
        "OP_ACK": "streams.wire.acker",
        "OP_INIT": "streams.wire.acker",
        "RESULT_ACK": "streams.wire.acker",
        "decode_list": "streams.wire.acker",
        "encode_ops": "streams.wire.acker",
        "ACKER_COMPONENT": "streams.wire.naming",
        "ack_result_topic": "streams.wire.naming",
        "acker_topic": "streams.wire.naming",
        "component_group": "streams.wire.naming",
    },
)
