"""Send what a producer holds now, not after ``linger.ms``: for an executor whose input is drained.

librdkafka holds a partition's records up to ``linger.ms`` (``squall.kafka.linger.ms``, 5 ms)
to fill a batch, and ignores that wait only while a flush call lasts: ``rd_kafka_flush`` raises
its "flushing" flag and wakes the broker threads, which then send what is queued at once. At
full speed the linger is what makes batches (linger 0 cost the word count 28% of its
throughput on Apache Kafka: 18,248 against 25,308 records/s, 59 against 45 us of CPU a line,
one run each). Below full speed it is a wait on every hop: the latency workload's first hop
(spout to bolt) and its acker ops spent 5-7 ms of transit in it at p50.

So an executor that has caught up with its input sends what it holds with a flush bounded by
``wait_s``. Measured with ``linger.ms`` 1000 on the embedded broker: ``flush(0)`` and
``flush(0.0005)`` send nothing (librdkafka counts whole milliseconds, and the flag is down
again before a broker thread wakes); ``flush(0.001)`` and ``flush(0.002)`` had every record
delivered in 0.2-0.5 ms.
"""

from __future__ import annotations

from confluent_kafka import Producer

SEND_NOW_WAIT_S = 0.002
"""How long :func:`send_now` may wait (seconds): enough for a broker thread to wake and send;
it returns sooner once everything is delivered."""


def send_now(producer: Producer, wait_s: float = SEND_NOW_WAIT_S) -> int:
    """Send every record ``producer`` holds now (see the module's docstring); wait at most ``wait_s`` seconds.

    Delivery reports that arrive meanwhile are served (the records' callbacks run here). Returns
    how many records were still queued or in flight when it returned: they were sent, and their
    reports come with a later poll. Does nothing (returns 0) when the producer holds nothing.
    """
    if not len(producer):
        return 0
    return int(producer.flush(wait_s))
