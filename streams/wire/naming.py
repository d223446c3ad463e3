"""Kafka names for a topology's topics and consumer groups.

Everything a topology ``T`` owns is prefixed ``squall.T.`` (see docs/design.md):

=============================  ===========================================================
``squall.T.<bolt>``            a bolt's input topic; partition *i* is the bolt's task *i*
``squall.T.__acker``           acker input; partition = murmur2(root id) % ackers
``squall.T.__acker.changelog`` the acker table's changelog, partitioned like ``__acker``
``squall.T.__ack_result``      acker -> spout; partition = the spout's global task id
``squall.T.__metrics``         executor stats snapshots (JSON), read by ``squall run``
``squall.T.__dlq``             dead-letter topic for records past their retries or poison
``squall.T.__errors``          components' error reports (exceptions, fail reasons, poison; compacted)
``squall.T.__progress``        bolt tasks' flushed offsets (re-executions after a crash; compacted)
``squall.T.__trace``           events of sampled trees (``topology.debug``; one record per executor flush)
``squall.T.__coordinator``     transactional spouts' coordinator state (key = spout id)
``squall.T.__ledger``          spout tasks' durable counts (partition = the spout's global task id)
``squall.T.<bolt>.state``      a stateful bolt's checkpoints with ``kafka://`` state (compacted; partition = task)
=============================  ===========================================================

Consumer groups are named like the topic the group reads: ``squall.T.<component>``.
"""

from __future__ import annotations

PREFIX = "squall"
"""The first part of every topic and group name Squall owns."""

ACKER_COMPONENT = "__acker"
"""The acker's component id (Storm's ``Acker.ACKER_COMPONENT_ID``): in log lines, metric
labels, worker plans and the acker's topic name. Spelled only here."""

TP = tuple[str, int]
"""A topic partition as ``(topic, partition)`` (a plain tuple: hashable, cheap, and free of
the Kafka client; ``confluent_kafka.TopicPartition`` is the client's own)."""


def component_topic(topology: str, component: str) -> str:
    """The input topic of ``component``: ``squall.T.<component>`` (a partition per task)."""
    return f"{PREFIX}.{topology}.{component}"


def component_group(topology: str, component: str) -> str:
    """The consumer group that commits ``component``'s offsets: ``squall.T.<component>``."""
    return f"{PREFIX}.{topology}.{component}"


def acker_topic(topology: str) -> str:
    """The ackers' input: ``squall.T.__acker`` (partition = murmur2(root id) % ackers)."""
    return f"{PREFIX}.{topology}.{ACKER_COMPONENT}"


def acker_changelog_topic(topology: str) -> str:
    """The acker table's changelog: ``squall.T.__acker.changelog``, partitioned like ``__acker``."""
    return f"{acker_topic(topology)}.changelog"


def ack_result_topic(topology: str) -> str:
    """Acker to spout: ``squall.T.__ack_result`` (partition = the spout's global task id)."""
    return f"{PREFIX}.{topology}.__ack_result"


def metrics_topic(topology: str) -> str:
    """Executors' stats snapshots: ``squall.T.__metrics``."""
    return f"{PREFIX}.{topology}.__metrics"


def show_topic(topology: str, component: str, stream: str) -> str:
    """Tuples ``squall run --show`` prints: ``squall.T.__show.<component>.<stream>``."""
    return f"{PREFIX}.{topology}.__show.{component}.{stream}"


def dead_letter_topic(topology: str) -> str:
    """Poison records and records past their retries: ``squall.T.__dlq``."""
    return f"{PREFIX}.{topology}.__dlq"


def errors_topic(topology: str) -> str:
    """Components' error reports: ``squall.T.__errors`` (compacted on ``component/task/slot``)."""
    return f"{PREFIX}.{topology}.__errors"


def progress_topic(topology: str) -> str:
    """Bolt tasks' progress (the offset each flush made safe): ``squall.T.__progress`` (compacted; key ``component:task``)."""
    return f"{PREFIX}.{topology}.__progress"


def trace_topic(topology: str) -> str:
    """Events of sampled trees (``topology.debug``): ``squall.T.__trace`` (key = the component)."""
    return f"{PREFIX}.{topology}.__trace"


def coordinator_topic(topology: str) -> str:
    """Transactional spouts' coordinator state: ``squall.T.__coordinator`` (compacted)."""
    return f"{PREFIX}.{topology}.__coordinator"


def ledger_topic(topology: str) -> str:
    """Spout tasks' durable ledgers: ``squall.T.__ledger`` (partition = spout task id)."""
    return f"{PREFIX}.{topology}.__ledger"


def state_changelog_topic(topology: str, component: str) -> str:
    """A stateful bolt's checkpoints with ``kafka://`` state: ``squall.T.<bolt>.state`` (compacted; partition *i* = task *i*)."""
    return f"{component_topic(topology, component)}.state"


def partition_key(topic: str, partition: int) -> str:
    """``"topic[p]"``: a source partition's key in a spout task's ledger (:mod:`streams.monitoring.spout_ledger`).

    >>> partition_key("lines", 3)
    'lines[3]'
    """
    return f"{topic}[{partition}]"
