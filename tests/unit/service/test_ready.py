"""``squall run`` feeds input only once every component's tasks are settled."""

from __future__ import annotations

from service.run.runner import settled


def test_settled_needs_every_task_once_and_every_executor_busy() -> None:
    assert settled([[0], [1]], tasks=2, executors=2)
    assert settled([[0, 1, 2]], tasks=3, executors=1)
    # a stale snapshot of the first executor (it held both tasks before the group grew)
    # next to the second executor's first, empty, snapshot: a rebalance is under way
    assert not settled([[0, 1], []], tasks=2, executors=2)
    assert not settled([[0, 1], [1]], tasks=2, executors=2)  # task 1 claimed twice
    assert not settled([[0]], tasks=2, executors=2)  # task 1 not owned yet
    assert not settled([], tasks=1, executors=1)
