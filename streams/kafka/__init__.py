"""Reading Kafka (storm-kafka-client's ``kafka/spout/``).

Client factories, fetch gaps, the source protocol a Kafka-reading spout offers, the
executor's feed, offsets, retries and :class:`~streams.kafka.spout.KafkaSpout`.

Imports :mod:`streams.model` and below, never the executors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streams.lazy import lazy_exports

if TYPE_CHECKING:
    from streams.kafka.fetch_gaps import FetchGaps

__all__ = ["FetchGaps"]

__getattr__ = lazy_exports(
    __name__,
    {
        "FetchGaps": "streams.kafka.fetch_gaps",
    },
)
