"""The topics Squall creates for a topology: the purged ones roll a segment a minute, so purged records leave the disk, and the
kept ones a tenth of their retention, so the retention frees it (issue 51)."""

from __future__ import annotations

from examples.wordcount import topology
from service.brokers.admin import COMPACTED, ROLLED, topology_topics
from streams.config import resolve


def test_the_purged_topics_roll_a_segment_a_minute_and_the_kept_ones_a_tenth_of_their_retention() -> None:
    t = topology()
    specs = topology_topics(t, resolve(t.conf))
    purged = {topic for topic, spec in specs.items() if spec.purged}
    assert purged == {f"squall.{t.name}.split", f"squall.{t.name}.count", f"squall.{t.name}.__acker", f"squall.{t.name}.__ack_result"}
    for topic, spec in specs.items():
        rolls = topic in purged or spec.config["cleanup.policy"] == "compact"  # compaction reaches only rolled segments
        retention = int(spec.config.get("retention.ms", "-1"))
        kept = str(min(3_600_000, max(60_000, retention // 10)))  # a kept topic rolls a tenth of its retention: the retention frees disk
        want = (ROLLED["segment.ms"], ROLLED["segment.bytes"]) if rolls else (kept, None)
        assert (spec.config.get("segment.ms"), spec.config.get("segment.bytes")) == want, topic
    assert specs[f"squall.{t.name}.lines"].config["segment.ms"] == "3600000"  # 7 days: an hour
    short = topology_topics(t, resolve({**t.conf, "squall.topic.retention.ms": 300_000}))
    assert short[f"squall.{t.name}.lines"].config == {"cleanup.policy": "delete", "retention.ms": "300000", "retention.bytes": "-1", "segment.ms": "60000"}
    assert specs[f"squall.{t.name}.__progress"].config == COMPACTED and COMPACTED["segment.ms"] == ROLLED["segment.ms"]
    assert int(ROLLED["segment.bytes"]) >= 2**20 and int(ROLLED["segment.ms"]) <= 60_000  # Kafka refuses segments under 1 MiB
