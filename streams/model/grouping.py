"""Stream groupings: which tasks (input partitions) of a subscribing bolt get an emit.

Each grouping's ``choose(values)`` returns *local* task indexes ``0..n-1`` of the
target bolt, i.e. partitions of its input topic (Storm's seven groupings plus custom:
``org.apache.storm.grouping`` and ``daemon/GrouperFactory.java``). The kinds are
:class:`~streams.model.spec.GroupingKind`; the runtime makes one grouping per emitting task
and subscription (:func:`streams.runtime.routing.make_grouping`).
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Sequence
from typing import Any, Protocol

from typing_extensions import override

from streams.exceptions import TopologyError
from streams.model.context import LocalTasks, TopologyContext
from streams.wire.codec import encode_json


class CustomStreamGrouping(Protocol):
    """Storm's CustomStreamGrouping: ``prepare`` once, then ``choose_tasks`` per emit.

    ``target_tasks`` and the returned ids are global task ids.
    """

    def prepare(self, context: TopologyContext, stream: tuple[str, str], target_tasks: list[int]) -> None:
        """Called once per emitting task, with the target bolt's global ``target_tasks``."""
        ...

    def choose_tasks(self, task_id: int, values: list[Any]) -> list[int]:
        """The global task ids (of ``target_tasks``) that get ``values``, emitted by ``task_id``."""
        ...


class Grouping:
    """One subscription's grouping, as the runtime uses it: ``choose`` picks local task indexes."""

    def choose(self, values: list[Any]) -> Sequence[int]:
        """The local task indexes (``0..n-1``, input partitions of the target) that get ``values``."""
        raise NotImplementedError


class ShuffleGrouping(Grouping):
    """Balanced: the tasks in one random order, taken round-robin (Storm 2.x's ``ShuffleGrouping``).

    The order is drawn once, per emitting task and subscription, as Storm's ``prepare`` does:
    each emitting task starts its cycles at a random task, and a cycle of ``n`` emits reaches
    each of the ``n`` tasks once. Squall used to reshuffle at the end of each cycle; that cost
    a ``random.shuffle`` every ``n`` emits (measured: 2.8% of the exactly-once word count's
    spout worker, whose two ``split`` tasks made it a shuffle every second line).
    """

    def __init__(self, n: int) -> None:
        order = list(range(n))
        random.shuffle(order)
        self.choices: list[tuple[int]] = [(t,) for t in order]
        """Each task as the one-element answer :meth:`choose` returns (made once, not per emit)."""
        self.i = 0
        self.n = n

    @override
    def choose(self, values: list[Any]) -> Sequence[int]:
        i = self.i
        if i >= self.n:
            i = 0
        self.i = i + 1
        return self.choices[i]


class FieldsGrouping(Grouping):
    """The same values of ``fields`` always reach the same task, modulo the task count, stable across processes and languages.

    One string field hashes as CRC-32 of its UTF-8 bytes; anything else as CRC-32 of the
    UTF-8 JSON array of the grouped values.

    Results for single string keys are memoised (word counts repeat keys; bounded to
    :data:`CACHE_SIZE` entries, then cleared).
    """

    CACHE_SIZE = 100_000

    def __init__(self, n: int, indexes: Sequence[int]) -> None:
        self.n = n
        self.indexes = tuple(indexes)
        self.single = self.indexes[0] if len(self.indexes) == 1 else None
        self._cache: dict[str, tuple[int]] = {}

    @override
    def choose(self, values: list[Any]) -> Sequence[int]:
        single = self.single
        if single is not None:
            v = values[single]
            if type(v) is str:
                got = self._cache.get(v)
                if got is None:
                    if len(self._cache) >= self.CACHE_SIZE:
                        self._cache.clear()
                    got = self._cache[v] = (zlib.crc32(v.encode()) % self.n,)
                return got
            key = encode_json([v])
        else:
            key = encode_json([values[i] for i in self.indexes])
        return (zlib.crc32(key) % self.n,)


class AllGrouping(Grouping):
    """Every task gets every tuple (Storm's all grouping)."""

    def __init__(self, n: int) -> None:
        self.all = tuple(range(n))

    @override
    def choose(self, values: list[Any]) -> Sequence[int]:
        return self.all


class GlobalGrouping(Grouping):
    """Everything to the lowest task id."""

    @override
    def choose(self, values: list[Any]) -> Sequence[int]:
        return (0,)


class DirectGrouping(Grouping):
    """Only ``emit_direct`` reaches a direct subscriber; ``emit`` chooses nothing."""

    @override
    def choose(self, values: list[Any]) -> Sequence[int]:
        return ()


class LocalOrShuffleGrouping(Grouping):
    """Shuffle among the target's tasks running in this worker, else among all."""

    def __init__(self, n: int, component: str, base: int, local: LocalTasks) -> None:
        self.shuffle = ShuffleGrouping(n)
        self.component = component
        self.base = base
        self.local = local

    @override
    def choose(self, values: list[Any]) -> Sequence[int]:
        here = self.local.of(self.component)
        if here:
            return (random.choice(sorted(here)) - self.base,)
        return self.shuffle.choose(values)


class CustomGrouping(Grouping):
    """A :class:`CustomStreamGrouping` adapted to local task indexes; raises TopologyError for a task not the target's."""

    def __init__(self, custom: CustomStreamGrouping, task_id: int, base: int, n: int, target: str) -> None:
        self.custom = custom
        self.task_id = task_id
        self.base = base
        self.n = n
        self.target = target

    @override
    def choose(self, values: list[Any]) -> Sequence[int]:
        out = []
        for t in self.custom.choose_tasks(self.task_id, values):
            local = t - self.base
            if not 0 <= local < self.n:
                raise TopologyError(f"[{self.target}] custom grouping chose task {t}, not one of this bolt's tasks")
            out.append(local)
        return out
