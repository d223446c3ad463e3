"""The servers Squall starts or provisions: the embedded broker (tansu), Apache Kafka, PostgreSQL, and a topology's topics.

Storm has no counterpart (it starts ZooKeeper in ``LocalCluster`` and leaves the rest to the
operator). The launchers serve ``squall run``, ``squall broker``, the tests and ``bench/``;
:mod:`~service.brokers.admin` is the only place Squall creates, reads or checks topics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streams.lazy import lazy_exports

if TYPE_CHECKING:
    from service.brokers.admin import ensure_topics, ensure_topology_topics, read_records, read_topic
    from service.brokers.apache_kafka import ApacheKafka, kafka_jars
    from service.brokers.embedded import EmbeddedBroker, free_port
    from service.brokers.postgres import local_postgres

__all__ = [
    "ApacheKafka",
    "EmbeddedBroker",
    "ensure_topics",
    "ensure_topology_topics",
    "free_port",
    "kafka_jars",
    "local_postgres",
    "read_records",
    "read_topic",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "ensure_topics": "service.brokers.admin",
        "ensure_topology_topics": "service.brokers.admin",
        "read_records": "service.brokers.admin",
        "read_topic": "service.brokers.admin",
        "ApacheKafka": "service.brokers.apache_kafka",
        "kafka_jars": "service.brokers.apache_kafka",
        "free_port": "service.brokers.embedded",
        "EmbeddedBroker": "service.brokers.embedded",
        "local_postgres": "service.brokers.postgres",
    },
)
