"""The desired state of every topology and who runs what: Storm's Nimbus state in ZooKeeper, kept in compacted Kafka topics.

A topology's control record (:mod:`~service.control.record`, pure) and the topics that carry it
(:mod:`~service.control.log`); the scheduling of tasks into executors and workers
(:mod:`~service.control.scheduling`, Storm's ``DefaultScheduler``) and the plan a worker reads;
worker slots among supervisors (:mod:`~service.control.slots`); claims on tasks
(:mod:`~service.control.claims`); worker events; and the client the writing verbs use
(submit, kill, activate, deactivate, rebalance, set_log_level: Storm's ``Nimbus.Iface``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streams.lazy import lazy_exports

if TYPE_CHECKING:
    from service.control.scheduling import ExecutorAssignment, WorkerPlan, worker_plan

__all__ = ["ExecutorAssignment", "WorkerPlan", "worker_plan"]

__getattr__ = lazy_exports(
    __name__,
    {
        "ExecutorAssignment": "service.control.scheduling",
        "WorkerPlan": "service.control.scheduling",
        "worker_plan": "service.control.scheduling",
    },
)
