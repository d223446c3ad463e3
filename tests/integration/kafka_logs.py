"""The records a Kafka node's log files hold, read with Kafka's own ``DumpLogSegments`` (from the launcher's jars).

What a consumer can no longer see is often still there: Squall purges the topics between its
components with ``DeleteRecords``, which moves a partition's log start offset but deletes no
segment file until the whole segment is below it (they roll a segment a minute). So a test can
check the records of the segments still on disk, e.g. that no batch was written twice.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from service.brokers.apache_kafka import kafka_jars
from streams.wire.acker import OP_FAIL

_BATCH = re.compile(r"^baseOffset: \d+ .* producerId: (-?\d+) ")
_RECORD = re.compile(r"^\| offset: (\d+) .* payload: (.*)$")


@dataclass(frozen=True)
class LoggedRecord:
    """One record of a partition's log: its offset, the producer id of its batch (-1: not idempotent) and its value as text."""

    offset: int
    producer_id: int
    payload: str


def logged_records(partition_dir: Path) -> list[LoggedRecord]:
    """Every record in the segment files of one partition directory (``<log.dir>/<topic>-<partition>``), oldest first.

    Squall's purged topics roll a segment a minute and the broker deletes one once it is wholly
    below the log start (``service.brokers.admin``): a segment listed here may be gone when it is
    read. Its records were purged and cannot be checked: when the one read of all segments
    fails, each is read alone and one that vanished meanwhile is passed over (any other failure
    raises, with Kafka's words).
    """
    segments = sorted(partition_dir.glob("*.log"))
    if not segments:
        return []
    got = _dump(segments)
    if got.returncode == 0:
        return _parse(got.stdout)
    records: list[LoggedRecord] = []
    for segment in segments:
        one = _dump([segment])
        if one.returncode == 0:
            records.extend(_parse(one.stdout))
        elif segment.exists():
            raise AssertionError(f"DumpLogSegments failed on {segment}: {(one.stderr or one.stdout)[-1000:]}")
        # else: deleted by retention while listed (purged records)
    return records


def _dump(segments: list[Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["java", "-cp", f"{kafka_jars()}/*", "org.apache.kafka.tools.DumpLogSegments", "--print-data-log", "--files", ",".join(map(str, segments))],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _parse(out: str) -> list[LoggedRecord]:
    records: list[LoggedRecord] = []
    producer = -1
    for line in out.splitlines():
        if m := _BATCH.match(line):
            producer = int(m.group(1))
        elif m := _RECORD.match(line):
            records.append(LoggedRecord(int(m.group(1)), producer, m.group(2)))
    return records


def fullest_copy(log_dirs: list[Path], topic: str, partition: int) -> Path | None:
    """The replica directory of ``topic[partition]`` whose segments hold the most bytes (the most complete copy), or None."""
    copies = [d / f"{topic}-{partition}" for d in log_dirs if (d / f"{topic}-{partition}").is_dir()]
    return max(copies, key=lambda c: sum(s.stat().st_size for s in c.glob("*.log")), default=None)


def written_twice(
    log_dirs: list[Path], topics: list[str], examples: dict[str, list[str]] | None = None, fails_again: dict[str, int] | None = None
) -> dict[str, tuple[int, int, int]]:
    """Per ``topic[partition]`` of ``topics``: (records, records one producer wrote again with the same value, records from a producer without idempotence).

    The second figure is from :func:`faults` of the partition's records; without idempotence
    every producer id is -1, and such records are counted in the third figure. ``examples``, if
    given, gets up to 3 values written twice per ``topic[partition]`` (for the failure message);
    ``fails_again``, if given, how many acker fails one producer wrote again there (when any),
    which are not counted.
    """
    found: dict[str, tuple[int, int, int]] = {}
    for topic in topics:
        suffixes = {d.name[len(topic) + 1 :] for log_dir in log_dirs for d in log_dir.glob(f"{topic}-*")}
        partitions = sorted(int(x) for x in suffixes if x.isdigit())  # not squall.T.__acker.changelog-0 for squall.T.__acker
        for p in partitions:
            copy = fullest_copy(log_dirs, topic, p)
            records = logged_records(copy) if copy is not None else []
            again, fails = faults(records)
            found[f"{topic}[{p}]"] = (len(records), sum(again.values()), sum(1 for r in records if r.producer_id < 0))
            if fails_again is not None and fails:
                fails_again[f"{topic}[{p}]"] = fails
            if examples is not None and again:
                examples[f"{topic}[{p}]"] = [f"producer {pid} x{n + 1}: {payload[:300]}" for (pid, payload), n in list(again.items())[:3]]
    return found


def faults(records: list[LoggedRecord]) -> tuple[dict[tuple[int, str], int], int]:
    """(the :func:`repeats` that are faults, how many acker fails one producer wrote again): those values are :func:`only_fails`, no fault.

    >>> r = lambda pid, payload: LoggedRecord(0, pid, payload)
    >>> faults([r(7, '[[1,5,9]]'), r(7, '[[1,5,9]]'), r(7, '[[2,5,"lost"]]'), r(7, '[[2,5,"lost"]]'), r(7, '[[2,5,"lost"]]')])
    ({(7, '[[1,5,9]]'): 1}, 2)
    """
    again: dict[tuple[int, str], int] = {}
    fails = 0
    for key, n in repeats(records).items():
        if only_fails(key[1]):
            fails += n
        else:
            again[key] = n
    return again, fails


def repeats(records: list[LoggedRecord]) -> dict[tuple[int, str], int]:
    """(producer id, value) -> how many times more than once that producer wrote that value, for values written more than once.

    Two producers may write equal values (two bolts failing the same trees for the same
    reason), so a record written again is the same value from the same producer id: one
    producer's batch again.

    >>> r = lambda pid, payload: LoggedRecord(0, pid, payload)
    >>> repeats([r(7, '[[1,5,9]]'), r(7, '[[1,5,9]]'), r(8, '[[1,5,9]]'), r(7, '[[1,6,9]]')])
    {(7, '[[1,5,9]]'): 1}
    """
    seen = Counter((r.producer_id, r.payload) for r in records)
    return {key: n - 1 for key, n in seen.items() if n > 1}


def only_fails(payload: str) -> bool:
    """The value is a JSON list of acker ops, every one a fail (``streams.wire.acker.OP_FAIL``): written again, it is no fault.

    A fail is idempotent: the acker answers a tree's first fail and forgets the tree (a later
    fail finds none, and its entry expires unanswered, counted ``orphaned``), and a replay has
    a new root id. One executor may fail the same tree, for the same reason, from two flushes
    whose outputs were both lost (two tuples of one tree, e.g. two words of one line, in
    flushes a cut off leader refused one after the other).

    >>> only_fails('[[2,5,"lost"],[2,6]]'), only_fails('[[2,5,"lost"],[1,6,9]]'), only_fails('[1,"default"]')
    (True, False, False)
    """
    if not payload.startswith("[["):  # a tuple envelope starts with its version number
        return False
    try:
        ops = json.loads(payload)
    except ValueError:
        return False
    return isinstance(ops, list) and all(isinstance(op, list) and op[:1] == [OP_FAIL] for op in ops)
