"""The native acker's flush: results at once when its input is drained, offsets committed on the flush interval only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acker.durable import DurableLedger
from acker.ledger import Ledger
from acker.runtime_native import AckerExecutor
from streams.config import resolve
from streams.model.loader import load_topology
from streams.runtime.executor import ExecutorEnv
from streams.testing.memlog import Record
from streams.wire.acker import OP_ACK, OP_INIT, encode_ops
from streams.wire.naming import ack_result_topic, acker_topic
from tests.unit.runtime.test_fencing import Committer

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_a_drained_flush_sends_the_results_and_the_interval_s_flush_commits() -> None:
    topology = load_topology(EXAMPLES / "wordcount.py", "acker-flush")
    acker = AckerExecutor(ExecutorEnv(topology=topology, component="__acker", conf=resolve(topology.conf), bootstrap="127.0.0.1:1", workdir=Path("/tmp")))
    acker.ledgers[0] = DurableLedger(Ledger(30.0, clock=lambda: 0.0))
    sent: list[tuple[str, Any]] = []
    acker.produce = lambda topic, value, key=None, partition=-1, **kw: sent.append((topic, key))
    topic = acker_topic(topology.name)
    acker._apply(Record(topic, 0, 0, encode_ops([[OP_INIT, 11, 5, 0], [OP_ACK, 11, 5]])))  # a tree, complete
    group = Committer()
    acker._flush(group, commit=False)  # the input drained: the result goes at once
    assert [t for t, _ in sent] == [ack_result_topic(topology.name)] and group.commits == []
    sent.clear()
    acker._flush(group)  # the interval's flush: the commit, then what follows it
    assert [[(p, off) for _, p, off, _ in c] for c in group.commits] == [[(0, 1)]] and acker.committed == {0: 1}
    assert ack_result_topic(topology.name) not in [t for t, _ in sent]  # sent once
