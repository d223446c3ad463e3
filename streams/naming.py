"""Kafka names for a topology's topics and consumer groups.

Everything a topology ``T`` owns is prefixed ``squall.T.`` (see docs/design.md):

=============================  ===========================================================
``squall.T.<bolt>``            a bolt's input topic; partition *i* is the bolt's task *i*
``squall.T.__acker``           acker input; partition = murmur2(root id) % ackers
``squall.T.__acker.changelog`` the acker table's changelog, partitioned like ``__acker``
``squall.T.__ack_result``      acker -> spout; partition = the spout's global task id
``squall.T.__metrics``         executor stats snapshots (JSON), read by ``squall run``
``squall.T.__dlq``             dead-letter topic for records past their retries or poison
``squall.T.__coordinator``     transactional spouts' coordinator state (key = spout id)
``squall.T.__ledger``          spout tasks' durable counts (partition = the spout's global task id)
=============================  ===========================================================

Consumer groups are named like the topic the group reads: ``squall.T.<component>``.
"""

from __future__ import annotations

PREFIX = "squall"


def component_topic(topology: str, component: str) -> str:
    return f"{PREFIX}.{topology}.{component}"


def component_group(topology: str, component: str) -> str:
    return f"{PREFIX}.{topology}.{component}"


def acker_topic(topology: str) -> str:
    return f"{PREFIX}.{topology}.__acker"


def acker_changelog_topic(topology: str) -> str:
    return f"{PREFIX}.{topology}.__acker.changelog"


def ack_result_topic(topology: str) -> str:
    return f"{PREFIX}.{topology}.__ack_result"


def metrics_topic(topology: str) -> str:
    return f"{PREFIX}.{topology}.__metrics"


def dead_letter_topic(topology: str) -> str:
    return f"{PREFIX}.{topology}.__dlq"


def coordinator_topic(topology: str) -> str:
    return f"{PREFIX}.{topology}.__coordinator"


def ledger_topic(topology: str) -> str:
    return f"{PREFIX}.{topology}.__ledger"
