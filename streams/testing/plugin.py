"""The kit's pytest plugin: two fixtures for every test.

Enable it with ``pytest -p streams.testing``, or ``pytest_plugins = ["streams.testing"]`` in a
conftest.py.

* ``squall_time`` -- a fresh :class:`~streams.testing.clock.SimulatedTime`.
* ``squall_kit`` -- a factory: ``squall_kit(topology, config=None, faults=None, seed=0)``
  returns a :class:`~streams.testing.local.LocalTopology` on ``squall_time``, closed when the
  test ends.

Example (a test file)::

    from examples.wordcount import topology

    def test_counts(squall_kit, squall_time):
        local = squall_kit(topology())
        local.feed("lines", ["a b a"])
        local.settle()
        assert local.result().output() == {"a": 2, "b": 1}
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from streams.model.spec import Topology
from streams.testing.clock import SimulatedTime
from streams.testing.faults import Faults
from streams.testing.local import LocalTopology


@pytest.fixture
def squall_time() -> SimulatedTime:
    """A fresh simulated clock (starts at 0 s monotonic, :data:`SimulatedTime.EPOCH` wall)."""
    return SimulatedTime()


@pytest.fixture
def squall_kit(squall_time: SimulatedTime) -> Iterator[Callable[..., LocalTopology]]:
    """``squall_kit(topology, *, config=None, faults=None, seed=0) -> LocalTopology`` on ``squall_time``; every one made is closed after the test."""
    made: list[LocalTopology] = []

    def make(topology: Topology, *, config: Mapping[str, Any] | None = None, faults: Faults | None = None, seed: int = 0) -> LocalTopology:
        local = LocalTopology(topology, config=config, time=squall_time, faults=faults, seed=seed)
        made.append(local)
        return local

    yield make
    for local in made:
        local.close()
