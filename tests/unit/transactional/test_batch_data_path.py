"""A BatchBolt's data tuples through the bolt executor and its CoordinatedBolt: acked when ``execute`` returns, failed when it raises.

``CoordinatedBolt.execute`` runs a BatchBolt's data tuple inline with the batch's
bolt copy (the first tuple of a batch makes it). Whether the copy was new or not, it must ack,
fail and log alike: a FailedException fails the tuple quietly (its batch replays), any other exception
fails it and is logged, a FatalError leaves the CoordinatedBolt (it is no tuple's fail). Driven through a real
:class:`BoltExecutor` of the exactly-once word count's ``count``, with packs of batched tuples.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streams import BatchBolt, FailedException, Tuple
from streams.config import resolve
from streams.exceptions import FatalError
from streams.model.loader import load_topology
from streams.runtime.bolt import BoltExecutor
from streams.runtime.bolt_task import record_tuples
from streams.runtime.executor import ExecutorEnv
from streams.testing.memlog import Record
from streams.transactional.coordinated_bolt import CoordinatedBolt
from streams.wire.codec import encode_batched, encode_pack

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


class Moody(BatchBolt):
    """Counts ``ok``; raises FailedException on ``fail``, ValueError on ``boom``, FatalError on ``fatal``."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any, attempt: Any) -> None:
        super().prepare(conf, context, collector, attempt)
        self.seen = 0

    def execute(self, tuple: Tuple) -> None:  # noqa: A002
        kind = tuple[0]
        if kind == "fail":
            raise FailedException("not now")
        if kind == "boom":
            raise ValueError("boom")
        if kind == "fatal":
            raise FatalError("[count] fenced")
        self.seen += 1

    def finish_batch(self) -> None:
        pass


def executor() -> tuple[BoltExecutor, CoordinatedBolt, Any]:
    topology = load_topology(EXAMPLES / "wordcount_exactly_once.py", "batchpath")
    ex = BoltExecutor(ExecutorEnv(topology=topology, component="count", conf=resolve(topology.conf), bootstrap="127.0.0.1:1", workdir=Path("/tmp")))
    ex.produce = ex.transfer.send = lambda *a, **kw: None
    task = ex.by_partition[0] = ex._new_task(0)
    bolt = task.bolt
    while not isinstance(bolt, CoordinatedBolt):  # under any wrapper the executor adds
        bolt = bolt.inner  # type: ignore[attr-defined]
    bolt.inner = Moody()
    return ex, bolt, task.collector


def feed(ex: BoltExecutor, kinds: list[str], txid: int = 1) -> None:
    source = ex.topology.components["split"].task_base
    tuples = [encode_batched("default", "split", source, 7, [kind], 1000 + i, 2000 + i, (txid, 1)) for i, kind in enumerate(kinds)]
    for off in range(0, len(tuples), 5):
        ex._process(Record(ex.topic, 0, off, encode_pack(tuples[off : off + 5])))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(st.sampled_from(["ok", "ok", "fail", "boom"]), min_size=1, max_size=30))
def test_each_data_tuple_is_acked_or_failed_once_and_only_errors_are_logged(kinds: list[str], caplog: pytest.LogCaptureFixture) -> None:
    caplog.clear()
    ex, coordinated, collector = executor()
    with caplog.at_level(logging.ERROR, logger="squall.batch"):
        feed(ex, kinds)
    assert collector.acked == kinds.count("ok")
    assert collector.failed == kinds.count("fail") + kinds.count("boom")
    batch = coordinated.tracker.batches[1]
    assert batch.bolt is not None and batch.bolt.seen == kinds.count("ok")  # one copy for the batch, made by its first tuple
    logged = [r.getMessage() for r in caplog.records if r.name == "squall.batch"]
    assert len(logged) == kinds.count("boom") and all("boom" in m for m in logged)
    assert coordinated._anchors is None  # nothing stays anchored between tuples


@pytest.mark.parametrize("made", [False, True])
def test_a_fatal_error_in_a_batch_bolt_leaves_the_coordinated_bolt(made: bool) -> None:
    """Not a tuple's fail: the CoordinatedBolt lets it through, whether the batch's bolt copy existed or is made for it."""
    ex, coordinated, collector = executor()
    if made:
        feed(ex, ["ok", "ok"])
    source = ex.topology.components["split"].task_base
    raw = encode_batched("default", "split", source, 7, ["fatal"], 999, 998, (1, 1))
    (t,) = record_tuples(ex.topology, "count", ex.topic, raw, 0, 50)
    with pytest.raises(FatalError, match="fenced"):
        coordinated.execute(t)
    assert collector.failed == 0 and coordinated._anchors is None
