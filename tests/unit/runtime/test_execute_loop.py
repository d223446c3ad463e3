"""The bolt executor's loop calls ``execute`` itself for most tuples: it must do what ``execute_guarded`` does.

The common tuple (not timed, traced or hooked, not a system tuple) skips
:func:`~streams.runtime.bolt_task.execute_guarded` and :meth:`BoltExecutor._execute`
(two calls a tuple). The same pack, run once that way and once with a task hook (which
sends every tuple the general way), must leave the same acks, fails, whys, errors and
counts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams import Bolt, FailedException, Tuple
from streams.config import resolve
from streams.exceptions import StateFencedError
from streams.model.hooks import TaskHook
from streams.model.loader import load_topology
from streams.runtime.bolt import LATENCY_SAMPLE, BoltExecutor
from streams.runtime.bolt_task import BoltTask
from streams.runtime.executor import ExecutorEnv
from streams.testing.memlog import Record
from streams.wire.acker import OP_ACK
from streams.wire.codec import encode_pack, encode_rooted

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


class Moody(Bolt):
    """Acks ``ok``, raises FailedException on ``fail`` (with a reason) and ``quiet`` (without), ValueError on ``boom``, a FatalError on ``fatal``."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tuple: Tuple) -> None:  # noqa: A002
        kind = tuple[0]
        if kind == "fail":
            raise FailedException(f"no {tuple.offset}")
        if kind == "quiet":
            raise FailedException()
        if kind == "boom":
            raise ValueError("boom")
        if kind == "fatal":
            raise StateFencedError(f"[count] fenced at {tuple.offset}")
        self.collector.ack(tuple)


class Watching(TaskHook):
    """A hook that only watches: the executor then takes the general path for every tuple."""


def moody_split(hooked: bool) -> tuple[BoltExecutor, BoltTask]:
    """The word count's split executor with task 0 running :class:`Moody` (hooked: every tuple the general way)."""
    topology = load_topology(EXAMPLES / "wordcount.py", "loop")
    ex = BoltExecutor(ExecutorEnv(topology=topology, component="split", conf=resolve(topology.conf), bootstrap="127.0.0.1:1", workdir=Path("/tmp")))
    ex.produce = ex.transfer.send = lambda *a, **kw: None
    task = ex.by_partition[0] = ex._new_task(0)
    task.bolt = Moody()
    task.bolt.prepare({}, None, task.collector)
    if hooked:
        task.collector.hooks = [Watching()]
    return ex, task


def run(kinds: list[str], hooked: bool) -> dict[str, Any]:
    ex, task = moody_split(hooked)
    envelopes = [encode_rooted("default", "lines", 0, 1, [kind], i + 1, 70 + i) for i, kind in enumerate(kinds)]
    for off in range(0, len(envelopes), 7):  # packs of up to 7
        ex._process(Record(ex.topic, 0, off, encode_pack(envelopes[off : off + 7])))
    assert ex.acks is not None
    ops = sorted(map(tuple, (op for ops in ex.acks.drain().values() for op in ops)))
    ex._update_gauges()
    return {
        "ops": ops,
        "acked": task.collector.acked,
        "failed": task.collector.failed,
        "errors": ex.stats.counters.get("errors", 0),
        "reported": ex.errors.counts,
        "executed": ex.stats.counters["executed"],
        "timed": ex._exec_hist.count,
    }


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["ok", "ok", "ok", "fail", "quiet", "boom"]), min_size=1, max_size=3 * LATENCY_SAMPLE))
def test_the_loop_s_own_execute_acks_fails_and_reports_as_execute_guarded(kinds: list[str]) -> None:
    fast, general = run(kinds, hooked=False), run(kinds, hooked=True)
    assert fast == general
    assert fast["executed"] == len(kinds)
    assert fast["acked"] == kinds.count("ok")
    assert fast["failed"] == len(kinds) - kinds.count("ok")
    assert fast["errors"] == kinds.count("boom")  # a FailedException is a fail, not an error
    assert fast["reported"].get("exception", {}) == ({"ValueError": kinds.count("boom")} if "boom" in kinds else {})
    assert fast["timed"] == len(range(1, len(kinds) + 1, LATENCY_SAMPLE)) * LATENCY_SAMPLE  # the sample is still timed


@pytest.mark.parametrize("hooked", [False, True])
def test_a_fatal_error_in_execute_stops_the_executor_and_fails_no_tuple(hooked: bool) -> None:
    """*Stop*, not *fail this tuple* (streams.exceptions): a FatalError raised by ``execute`` (here a committer
    fenced by a newer owner of its state) leaves the executor's loop, on the loop's own path and the general
    one alike; the tuples before it were acked, it and the ones after it are neither acked nor failed."""
    ex, task = moody_split(hooked)
    pack = encode_pack([encode_rooted("default", "lines", 0, 1, [kind], i + 1, 70 + i) for i, kind in enumerate(["ok", "fatal", "ok"])])
    with pytest.raises(StateFencedError, match=r"\[count\] fenced at 4"):
        ex._process(Record(ex.topic, 0, 4, pack))
    assert ex.acks is not None
    ops = [op for ops in ex.acks.drain().values() for op in ops]
    assert task.collector.acked == 1 and task.collector.failed == 0
    assert [op[0] for op in ops] == [OP_ACK] and ops[0][1] == 1  # only the first tuple's tree (root 1) saw an op: an ack
    assert ex.stats.counters.get("errors", 0) == 0 and task.next_offset != 5  # not counted as a tuple's error; the record is not done
