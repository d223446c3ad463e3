"""The topics Squall creates for a topology: the purged ones roll a segment a minute, so purged records leave the disk (issue 51)."""

from __future__ import annotations

from examples.wordcount import topology
from service.brokers.admin import COMPACTED, ROLLED, topology_topics
from streams.config import resolve


def test_the_purged_topics_roll_a_segment_a_minute_and_the_others_keep_the_brokers_segments() -> None:
    t = topology()
    specs = topology_topics(t, resolve(t.conf))
    purged = {topic for topic, spec in specs.items() if spec.purged}
    assert purged == {f"squall.{t.name}.split", f"squall.{t.name}.count", f"squall.{t.name}.__acker", f"squall.{t.name}.__ack_result"}
    for topic, spec in specs.items():
        rolls = topic in purged or spec.config["cleanup.policy"] == "compact"  # compaction reaches only rolled segments
        want = (ROLLED["segment.ms"], ROLLED["segment.bytes"]) if rolls else (None, None)
        assert (spec.config.get("segment.ms"), spec.config.get("segment.bytes")) == want, topic
    assert specs[f"squall.{t.name}.__progress"].config == COMPACTED and COMPACTED["segment.ms"] == ROLLED["segment.ms"]
    assert int(ROLLED["segment.bytes"]) >= 2**20 and int(ROLLED["segment.ms"]) <= 60_000  # Kafka refuses segments under 1 MiB
