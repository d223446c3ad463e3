"""Stateful bolt checkpoints in a compacted changelog topic (``squall.state.url: kafka://``): state with no database.

As Quix and faust keep their tables, and Kafka Streams its stores: each stateful bolt has a
compacted topic ``squall.T.<bolt>.state`` (:func:`streams.wire.naming.state_changelog_topic`),
partition *i* = task *i*. Records (every one carries a header ``cp`` = ``b"<epoch>.<attempt>"``):

==========================  ==========================================================
key                         value
==========================  ==========================================================
``v`` + key (JSON)          the value (JSON); a tombstone (null) when the key was deleted
``a<checkpoint>.<source>``  applied tuple ids: ``<d at><q max offset>`` + packed ids (a
                            tombstone once forgotten; :class:`streams.state.keyvalue.AppliedIds`)
``c<epoch>``                the marker: ``{"checkpoint": n, "attempt": a, "at": t}``
==========================  ==========================================================

**Atomic checkpoints.** A task writes a checkpoint in one Kafka transaction (its
``transactional.id`` is ``squall.T.<bolt>.state.<task>``), the marker last. On Apache Kafka
a reader with ``read_committed`` never sees an aborted checkpoint, and the log cleaner removes
it. The embedded broker shows aborted records to such readers and compacts nothing, so the
reader also applies a record only once a marker of its epoch covers its attempt: the
*epoch* is one process's life with the task (one more than any epoch in the partition, taken
at :meth:`ChangelogKvStore.kv_load`), and the *attempt* counts that process's commits. A
process's commits are sequential, so a marker ``(e, a)`` covers every attempt ``<= a`` of
epoch ``e``; the only attempt of an epoch with no marker is the one a crash cut short (or one
whose commit failed, which the next attempt rewrites whole: changes stay pending until a
commit succeeds).

**Fencing.** :meth:`kv_load` calls ``init_transactions`` with the task's transactional id
before it reads, which aborts what a previous owner left open and fences it: a zombie worker
that still runs the task fails its next checkpoint with a fatal error instead of writing over
the new owner's state.

Restoring reads the partition from its start to its end (``enable.partition.eof``): the
state's size after compaction on Apache Kafka, every record ever written on the embedded
broker.
"""

from __future__ import annotations

import contextlib
import json
import logging
import struct
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, Message, Producer, TopicPartition
from typing_extensions import override

from streams.exceptions import FatalError, StateError
from streams.kafka.clients import new_consumer, new_producer
from streams.state.backend import KvCommit, KvSnapshot, KvStore
from streams.wire.naming import PREFIX

log = logging.getLogger("squall.state")

SCHEME = "kafka://"
"""``squall.state.url`` of the changelog store: the topology's own Kafka cluster."""

_HEADER = "cp"
_APPLIED = struct.Struct("<dq")


def changelog_topic(name: str) -> str:
    """The changelog of state ``name`` (``<topology>.<bolt>``): ``squall.<topology>.<bolt>.state``."""
    return f"{PREFIX}.{name}.state"


def _cp(msg: Message, topic: str) -> tuple[int, int]:
    for k, v in msg.headers() or ():
        if k == _HEADER and v is not None:
            epoch, _, attempt = bytes(v).partition(b".")
            return int(epoch), int(attempt)
    raise StateError(f"[state] record at {topic}[{msg.partition()}]@{msg.offset()} has no {_HEADER!r} header: not a Squall state changelog")


class _Replay:
    """Rebuilds one task's committed checkpoint from its changelog records, in log order (see the module docstring).

    An epoch's records are held until the epoch ends (the next epoch's first record, or the
    end of the partition), since an abort note can follow the marker it voids. ``aborted``:
    attempts of ``(epoch, attempt)`` known aborted although no note says so (this process's own).
    """

    def __init__(self, aborted: set[tuple[int, int]] | None = None) -> None:
        self.values: dict[str, str] = {}
        self.applied: dict[tuple[int, int], tuple[float, int, bytes]] = {}
        self.checkpoint = 0
        self.max_epoch = 0
        self.ignored = 0
        """Records of checkpoints that were aborted or cut short."""
        self._known_aborted = set(aborted or ())
        self._epoch: int | None = None
        self._records: list[tuple[int, bytes, bytes | None]] = []
        self._markers: dict[int, int] = {}
        self._aborted: set[int] = set()

    def add(self, epoch: int, attempt: int, key: bytes, value: bytes | None) -> None:
        """One record, in log order."""
        if epoch != self._epoch:
            self._end_epoch()
            self._epoch = epoch
            self.max_epoch = max(self.max_epoch, epoch)
        kind = key[:1]
        if kind == b"c":
            if value is not None:
                self._markers[attempt] = int(json.loads(value)["checkpoint"])
        elif kind == b"x":
            self._aborted.add(int(key[1:].partition(b".")[2]))
        else:
            self._records.append((attempt, key, value))

    def finish(self) -> _Replay:
        """Call after the last record."""
        self._end_epoch()
        return self

    def _end_epoch(self) -> None:
        epoch = self._epoch
        aborted = self._aborted | {a for e, a in self._known_aborted if e == epoch}
        good = [a for a in self._markers if a not in aborted]
        top = max(good, default=0)
        for attempt, key, value in self._records:
            if attempt <= top and attempt not in aborted:
                self._apply(key, value)
            else:
                self.ignored += 1
        if good:
            self.checkpoint = self._markers[top]
        self._records, self._markers, self._aborted = [], {}, set()

    def _apply(self, key: bytes, value: bytes | None) -> None:
        if key[:1] == b"v":
            k = key[1:].decode()
            if value is None:
                self.values.pop(k, None)
            else:
                self.values[k] = value.decode()
        elif key[:1] == b"a":
            checkpoint, _, source = key[1:].partition(b".")
            ck = (int(checkpoint), int(source))
            if value is None:
                self.applied.pop(ck, None)
            else:
                at, max_offset = _APPLIED.unpack_from(value)
                self.applied[ck] = (at, max_offset, bytes(value[_APPLIED.size :]))

    def snapshot(self) -> KvSnapshot:
        rows = [(c, at, s, m, ids) for (c, s), (at, m, ids) in sorted(self.applied.items())]
        return KvSnapshot(dict(self.values), rows, self.checkpoint)


class _Writer:
    """One task's transactional producer, its epoch and its attempts."""

    def __init__(self, producer: Producer, epoch: int) -> None:
        self.producer = producer
        self.epoch = epoch
        self.attempt = 0
        self.applied_keys: set[tuple[int, int]] = set()
        self.aborted: set[int] = set()
        """Attempts of this epoch that were aborted."""
        self.unnoted: set[int] = set()
        """Aborted attempts whose abort note is not written yet."""


class ChangelogKvStore(KvStore):
    """Stateful bolt checkpoints in compacted changelog topics (see the module docstring).

    Args:
      bootstrap: the cluster (``bootstrap.servers``).
      kafka: client overrides ``{"consumer": {...}, "producer": {...}}`` (security settings).
      component: named in errors and log lines.
      timeout_s: how long a restore or a commit may take before it fails (seconds).
    Raises StateError (the topic and partition) when the topic is missing or a commit fails,
    FatalError when another process took the task over (this one is fenced).
    """

    def __init__(self, bootstrap: str, kafka: dict[str, Any] | None = None, component: str = "?", timeout_s: float = 60.0) -> None:
        self.url = SCHEME
        self.bootstrap = bootstrap
        self.kafka = kafka or {}
        self.component = component
        self.timeout_s = timeout_s
        self._writers: dict[tuple[str, int], _Writer] = {}
        self._lock = threading.Lock()

    # -- reading -------------------------------------------------------------------------------
    def _read(self, topic: str, partitions: list[int] | None, each: Callable[[int, Message], None]) -> None:
        """Every committed record of ``partitions`` (all: None) from the start to the end."""
        c = new_consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": f"{PREFIX}.__state.reader",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "isolation.level": "read_committed",
                "fetch.wait.max.ms": 50,
                "log_level": 0,
                **self.kafka.get("consumer", {}),
            }
        )
        try:
            if partitions is None:
                meta = c.list_topics(topic, timeout=10).topics.get(topic)
                if meta is None or meta.error is not None or not meta.partitions:
                    raise StateError(f"[{self.component}] state changelog {topic} does not exist (created at submit for kafka:// state)")
                partitions = sorted(meta.partitions)
            c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
            left = set(partitions)
            deadline = time.monotonic() + self.timeout_s
            while left:
                for msg in c.consume(10000, 0.2):
                    err = msg.error()
                    if err is None:
                        each(msg.partition() or 0, msg)
                    elif err.code() == KafkaError._PARTITION_EOF:
                        left.discard(msg.partition() or 0)
                    elif err.code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION):
                        raise StateError(f"[{self.component}] state changelog {topic}[{msg.partition()}] does not exist: {err.str()}")
                if left and time.monotonic() > deadline:
                    raise StateError(
                        f"[{self.component}] could not read state changelog {topic} partitions {sorted(left)} to their end within {self.timeout_s:g} s"
                    )
        finally:
            c.close()

    def _replay(self, topic: str, partitions: list[int] | None, aborted: set[tuple[int, int]] | None = None) -> dict[int, _Replay]:
        out: dict[int, _Replay] = {}

        def each(p: int, msg: Message) -> None:
            epoch, attempt = _cp(msg, topic)
            replay = out.get(p)
            if replay is None:
                replay = out[p] = _Replay(aborted)
            replay.add(epoch, attempt, msg.key() or b"", msg.value())

        self._read(topic, partitions, each)
        return {p: r.finish() for p, r in out.items()}

    @override
    def kv_load(self, name: str, task: int) -> KvSnapshot:
        """Fence earlier owners of the task (first load only), then read its committed checkpoint."""
        topic = changelog_topic(name)
        with self._lock:
            writer = self._writers.get((name, task))
        if writer is None:
            producer = new_producer(
                {
                    "bootstrap.servers": self.bootstrap,
                    "transactional.id": f"{topic}.{task}",
                    "linger.ms": 5,
                    "log_level": 3,
                    **self.kafka.get("producer", {}),
                }
            )
            try:
                producer.init_transactions(self.timeout_s)
            except KafkaException as exc:
                raise StateError(f"[{self.component}] cannot start the transactional writer of {topic}[{task}]: {exc}") from exc
        mine = {(writer.epoch, a) for a in writer.aborted} if writer is not None else set()
        replay = self._replay(topic, [task], mine).get(task) or _Replay()
        if writer is None:
            writer = _Writer(producer, replay.max_epoch + 1)
            writer.applied_keys = set(replay.applied)
            with self._lock:
                self._writers[(name, task)] = writer
        if replay.ignored:
            log.info("[%s] %s[%d]: %d records of aborted or unfinished checkpoints ignored", self.component, topic, task, replay.ignored)
        return replay.snapshot()

    @override
    def kv_items(self, name: str) -> Iterator[tuple[int, str, str]]:
        for task, replay in sorted(self._replay(changelog_topic(name), None).items()):
            for k, v in replay.values.items():
                yield task, k, v

    # -- writing -------------------------------------------------------------------------------
    @override
    def kv_commit(self, name: str, task: int, commit: KvCommit) -> None:
        """Write the checkpoint in one transaction: values, applied ids, forgotten ids, then the marker.

        Raises StateError if the transaction is aborted (retry later: the changes stay pending),
        FatalError if this process was fenced by a newer owner of the task.
        """
        topic = changelog_topic(name)
        with self._lock:
            writer = self._writers.get((name, task))
        if writer is None:
            raise StateError(f"[{self.component}] {topic}[{task}]: checkpoint before the task's state was loaded")
        writer.attempt += 1
        cp = [(_HEADER, f"{writer.epoch}.{writer.attempt}".encode())]
        p = writer.producer
        forgotten = [ck for ck in writer.applied_keys if ck[0] <= commit.forget_upto] if commit.forget_upto else []
        try:
            p.begin_transaction()
            self._note_aborts(writer, topic, task, cp)
            for k, v in commit.upserts.items():
                self._produce(p, topic, task, b"v" + k.encode(), v.encode(), cp)
            for k in commit.deletes:
                self._produce(p, topic, task, b"v" + k.encode(), None, cp)
            for source, (max_offset, ids) in commit.applied.items():
                self._produce(p, topic, task, b"a%d.%d" % (commit.checkpoint, source), _APPLIED.pack(commit.at, max_offset) + ids, cp)
            for c, s in forgotten:
                self._produce(p, topic, task, b"a%d.%d" % (c, s), None, cp)
            marker = json.dumps({"checkpoint": commit.checkpoint, "attempt": writer.attempt, "at": commit.at}).encode()
            self._produce(p, topic, task, b"c%d" % writer.epoch, marker, cp)
            p.commit_transaction(self.timeout_s)
        except KafkaException as exc:
            self._aborted(writer, topic, task, exc)
            raise StateError(f"[{self.component}] checkpoint {commit.checkpoint} not written to {topic}[{task}]: {exc}") from exc
        writer.unnoted.clear()
        writer.applied_keys.difference_update(forgotten)
        writer.applied_keys.update((commit.checkpoint, s) for s in commit.applied)

    def _note_aborts(self, writer: _Writer, topic: str, task: int, cp: list[tuple[str, bytes]]) -> None:
        """Abort notes ``x<epoch>.<attempt>`` for this process's aborted attempts not yet noted (in the open transaction)."""
        for a in sorted(writer.unnoted):
            self._produce(writer.producer, topic, task, b"x%d.%d" % (writer.epoch, a), b"", cp)

    def _aborted(self, writer: _Writer, topic: str, task: int, exc: KafkaException) -> None:
        """After a failed commit: fatal if fenced; else abort, and note the abort at once if the broker lets us.

        A broker that shows aborted records (the embedded one) would otherwise show the
        attempt's marker as if it were committed; the note voids it. If the note cannot be
        written now, the next commit writes it first.
        """
        err = exc.args[0] if exc.args else None
        if isinstance(err, KafkaError) and err.fatal():
            raise FatalError(f"[{self.component}] {topic}[{task}]: this worker lost the task's state to a newer owner (fenced): {err.str()}") from exc
        p = writer.producer
        writer.aborted.add(writer.attempt)
        writer.unnoted.add(writer.attempt)
        try:
            p.abort_transaction(self.timeout_s)
            writer.attempt += 1
            p.begin_transaction()
            self._note_aborts(writer, topic, task, [(_HEADER, f"{writer.epoch}.{writer.attempt}".encode())])
            p.commit_transaction(self.timeout_s)
            writer.unnoted.clear()
        except KafkaException as again:
            log.warning("[%s] %s[%d]: noting the aborted checkpoint failed (the next one notes it): %s", self.component, topic, task, again)
            with contextlib.suppress(KafkaException):
                p.abort_transaction(self.timeout_s)

    @staticmethod
    def _produce(p: Producer, topic: str, task: int, key: bytes, value: bytes | None, headers: list[tuple[str, bytes]]) -> None:
        while True:
            try:
                p.produce(topic, value, key, partition=task, headers=headers)
                return
            except BufferError:
                p.poll(0.05)

    @override
    def close(self) -> None:
        with self._lock:
            writers, self._writers = list(self._writers.values()), {}
        for w in writers:
            w.producer.flush(5)


def open_changelog_store(bootstrap: str, kafka: dict[str, Any] | None = None, component: str = "?") -> ChangelogKvStore:
    """A :class:`ChangelogKvStore` on ``bootstrap`` (what ``kafka://`` opens)."""
    return ChangelogKvStore(bootstrap, kafka, component)
