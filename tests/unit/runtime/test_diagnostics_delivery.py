"""An error report or trace record the broker does not take never fails a tree (it is counted apart)."""

from __future__ import annotations

from examples.wordcount import topology
from streams.config import resolve
from streams.runtime.executor import Executor, ExecutorEnv


def test_a_lost_diagnostic_record_is_counted_and_does_not_count_as_a_lost_output() -> None:
    conf = resolve({"squall.topic.purge.interval.secs": 0})
    env = ExecutorEnv(
        topology=topology(), component="split", conf=conf, bootstrap="127.0.0.1:1", kafka={"producer": {"message.timeout.ms": 300, "log_level": 0}}
    )
    ex = Executor(env)
    try:
        ex._publish_error(b"split/1/0", b"{}")
        ex._publish_trace(b"split", b"{}")
        ex.producer.produce("squall.x.split", b"an output")  # a real output, on the producer's own callback
        ex.producer.flush(10)
        assert ex.stats.counters["diagnostics_lost"] == 2
        assert ex.delivery.failures == 1  # only the output
    finally:
        ex.producer.flush(0)
