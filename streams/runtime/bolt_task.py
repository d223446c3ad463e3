"""A bolt task: its state in the executor, and the path of one input record through it.

:func:`record_tuples` (decode) and :func:`execute_guarded` (Storm's ``BoltExecutor`` calling
``execute`` and turning an exception into a fail) are shared by the bolt executor
(:mod:`streams.runtime.bolt`) and the test kit (:mod:`streams.testing.local`), so a test runs a
record exactly as a worker does.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from streams.exceptions import FailedException, FatalError
from streams.model.bolt import Bolt
from streams.model.hooks import BoltExecuteInfo
from streams.model.spec import Topology
from streams.model.tuple import Tuple
from streams.runtime.collectors import BoltOutputCollectorImpl
from streams.runtime.handoff import TaskHandoff
from streams.wire.codec import decode_runs


def record_tuples(topology: Topology, component: str, topic: str, value: bytes | None, partition: int, offset: int) -> list[Tuple]:
    """The tuples in input record ``topic[partition]@offset`` of ``component`` (a bolt): one, or a pack's, in order.

    Every tuple of a pack carries its record's topic, partition and offset. Raises DecodeError
    naming the component, topic, partition and offset for a record that is not a tuple or a
    pack of them (the caller dead-letters it).
    """
    out: list[Tuple] = []
    append = out.append
    fields_of = topology.field_index
    index: dict[str, int] = {}
    last_source = last_stream = None  # a pack's runs of one sender share their heads' strings: one lookup per change
    for stream, source, source_task, epoch, anchors, batch, tid, items in decode_runs(
        value, component=component, topic=topic, partition=partition, offset=offset
    ):
        if source is not last_source or stream is not last_stream:
            index, last_source, last_stream = fields_of(source, stream), source, stream
        if tid is None:  # a run's tuples share every field but their values (decode_runs)
            for values in items:
                append(Tuple(values, stream, source, source_task, anchors, index, topic, partition, offset, batch, epoch))
        else:
            t = Tuple(items[0], stream, source, source_task, anchors, index, topic, partition, offset, batch, epoch)
            t.tid = tid  # only an envelope carries a tuple id: a segment of one
            append(t)
    return out


def execute_guarded(bolt: Bolt, collector: BoltOutputCollectorImpl, t: Tuple) -> Exception | None:
    """``bolt.execute(t)``, guarded as the bolt executor runs it.

    A raised FailedException fails ``t`` (Storm's ``FailedException``: replay, no error; its
    message, if any, is the fail's reason); any other exception fails it too and is
    returned, for the caller to count, report and log. A FatalError is no tuple's fail: it
    propagates, and stops the executor (:func:`settle_raised`). The task's hooks, if any, see
    ``bolt_execute`` with the latency (seconds) and the exception.
    """
    hooks = collector.hooks
    started = time.perf_counter() if hooks else 0.0
    error: Exception | None = None
    try:
        bolt.execute(t)
    except Exception as exc:
        error = settle_raised(collector, t, exc)
    if hooks:
        info = BoltExecuteInfo(t, collector.task_id, time.perf_counter() - started, error)
        for hook in hooks:
            hook.bolt_execute(info)
    return error


def settle_raised(collector: BoltOutputCollectorImpl, t: Tuple, exc: Exception) -> Exception | None:
    """Fail ``t``, whose ``execute`` raised ``exc``; return ``exc`` unless it was a FailedException (a fail the bolt asked for, not an error).

    :func:`execute_guarded`'s handling, shared with the bolt executor's loop, which calls
    ``execute`` itself for most tuples (:meth:`streams.runtime.bolt.BoltExecutor._process`).

    Raises ``exc`` again, failing nothing, when it is a FatalError (:mod:`streams.exceptions`:
    *stop*, not *fail this tuple*): a committer fenced by a newer owner of its state
    (StateFencedError), an emit on a stream the bolt never declared. Replaying the tuple would
    only raise it again; the executor stops, its worker exits non-zero and the error is
    published (``squall errors``, cause ``fatal``), and the tuple's tree is replayed by the next
    owner (it was never acked).
    """
    if isinstance(exc, FatalError):
        raise exc
    if isinstance(exc, FailedException):
        collector.fail(t, str(exc) or None)
        return None
    collector.fail_because(t, f"{type(exc).__name__}: {exc}")
    return exc


@dataclass(slots=True)
class BoltTask:
    """One task of this executor: its bolt copy, collector and input positions.

    ``next_offset``: after the last record executed; ``flushed_offset``: what the last
    flush made safe to commit; ``committed_offset``: what was committed (-1: nothing yet).
    """

    task_id: int
    bolt: Bolt
    collector: BoltOutputCollectorImpl
    next_offset: int = -1
    flushed_offset: int = -1
    committed_offset: int = -1
    sealed_offset: int = -1
    """``next_offset`` at the last flush (its delivery makes it the ``flushed_offset``)."""
    reexecute_until: int = -1
    """Input offsets below this were executed by the task's last life (a crash): executing them again is counted (:mod:`streams.monitoring.bolt_progress`)."""
    reexecute_cause: str = ""
    written_offset: int = -1
    """The flushed offset last written to ``squall.T.__progress``."""
    written_commit: int = -1
    """The confirmed commit last written to ``squall.T.__progress``."""
    start_commit: int = -1
    """The commit this life started from (the group's, or the newer one a replaced owner's late commit hid).

    Its progress records carry it until a commit of its own is confirmed."""
    handoff: TaskHandoff | None = None
    """A drain's hand-off in progress, giving (this life drains) or taking (its last life did) (:mod:`streams.runtime.handoff`)."""
    carry: tuple[int, int] | None = None
    """The hand-off ``(T, L)`` its progress records carry until a commit reaches ``L``."""
    written_carry: tuple[int, int] | None = None
    """The hand-off last written to ``squall.T.__progress``."""
