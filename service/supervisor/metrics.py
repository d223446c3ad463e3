"""A supervisor's own metrics (``squall serve``'s /metrics, beside its workers' executors).

Prometheus base units; every series carries the supervisor id. Created on the registry
passed in, so a test (or two supervisors in one process) keeps its own.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge


class SupervisorMetrics:
    """The families :class:`service.supervisor.daemon.SupervisorService` updates.

    Args: registry: where they are registered.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        labels = ["supervisor"]
        self.workers = Gauge("squall_supervisor_workers", "Workers this supervisor runs", labels, registry=registry)
        self.slots = Gauge(
            "squall_supervisor_slots",
            "Worker slots this supervisor can vouch for owning: 0 while cut off from the broker or rebalancing (all supervisors' add up to at most 32)",
            labels,
            registry=registry,
        )
        self.topologies = Gauge("squall_supervisor_topologies", "Topologies in the control topic", labels, registry=registry)
        self.hung = Counter(
            "squall_worker_hung",
            "Workers killed because their process stopped (no heartbeat for squall.worker.hang.timeout.secs)",
            ["supervisor", "topology"],
            registry=registry,
        )
        self.restarts = Counter("squall_worker_restarts", "Workers restarted after an unexpected exit", ["supervisor", "topology", "worker"], registry=registry)
        self.contested = Gauge(
            "squall_tasks_contested",
            "Tasks that two live worker processes, both holding their lease, claim at once (should never happen: service.worker.claim_watch fences the older)",
            ["supervisor", "topology"],
            registry=registry,
        )
        self.fenced = Counter(
            "squall_worker_fenced",
            "Workers of this supervisor that stopped because another process claimed their tasks",
            ["supervisor", "topology"],
            registry=registry,
        )
        self.silence = Gauge(
            "squall_supervisor_broker_silence_seconds",
            "Seconds since the broker last answered this supervisor (above 3: cut off, its workers' leases lapse; service.supervisor.contact)",
            labels,
            registry=registry,
        )
        self.plans = Counter("squall_supervisor_plans", "Topology plans made (submit, rebalance)", labels, registry=registry)
        self.broker = Gauge(
            "squall_embedded_broker_resident_memory_bytes",
            "Resident memory of the embedded broker a supervisor runs (it keeps every record in memory)",
            labels,
            registry=registry,
        )
