"""What ``squall run`` prints when a job ends: :class:`Summary`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

NO_OUTPUT = (
    'none declared: end the topology in a KafkaBolt or call TopologyBuilder.set_output(...) (README, "Output"), '
    "or print a stream's tuples with --show COMPONENT[:STREAM]"
)


@dataclass
class Summary:
    """What ``squall run`` prints and writes with ``--json``: counts, rates, latencies and the output."""

    topology: str
    records: int
    trees_acked: int
    """Spout message ids (records) whose trees were acked: a tree of several records counts each."""
    trees_failed: int
    """Spout message ids whose trees failed (a fail or a timeout), counted as ``trees_acked``."""
    replayed: int
    dead_lettered: int
    seconds: float
    records_per_s: float
    complete_latency_p50_s: float
    complete_latency_p99_s: float
    output: str | None = None
    keys: int = 0
    output_unit: str = "keys"
    """What ``keys`` counts: ``keys`` of a ``{key: value}`` output, or ``records`` of a KafkaBolt's topic."""
    worker_restarts: int = 0
    emitted: int = 0
    """Spout tuples emitted (first emits and replays), from the durable ledgers."""
    replays: dict[str, int] = field(default_factory=dict)
    """``replayed`` by cause (``fail``, ``timeout``, ``restart``: :mod:`streams.monitoring.spout_ledger`)."""
    batches_committed: int | None = None
    """Transactional topologies only (else None): batches committed, replayed, and the last txid."""
    batches_replayed: int | None = None
    last_txid: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    """Errors the components reported, by cause (``exception``, ``fail``, ``poison``, ``fatal``)."""
    last_errors: list[str] = field(default_factory=list)
    reexecuted: dict[str, int] = field(default_factory=dict)
    """Bolt input tuples executed again after a crash, by cause (``restart``, ``takeover``: :mod:`streams.monitoring.bolt_progress`)."""
    """The last error reports, one line each (:meth:`streams.monitoring.errors.ErrorReport.line`)."""

    def lines(self) -> list[str]:
        """The summary as the lines ``squall run`` prints."""
        return (
            [
                f"topology            {self.topology}",
                f"records             {self.records}",
                f"acked               {self.trees_acked} message ids",
                f"failed              {self.trees_failed} message ids",
                f"spout emitted       {self.emitted}",
                f"replayed            {self.replayed} ({', '.join(f'{c} {n}' for c, n in self.replays.items()) or 'none'})",
                f"dead-lettered       {self.dead_lettered}",
                f"seconds             {self.seconds:.2f}",
                f"throughput          {self.records_per_s:,.0f} records/s",
                f"complete latency    p50 {self.complete_latency_p50_s * 1000:.1f} ms, p99 {self.complete_latency_p99_s * 1000:.1f} ms",
                f"output              {self.output} ({self.keys} {self.output_unit})" if self.output else f"output              {NO_OUTPUT}",
                f"worker restarts     {self.worker_restarts}",
            ]
            + (
                [f"bolt re-executions  {sum(self.reexecuted.values())} ({', '.join(f'{c} {n}' for c, n in self.reexecuted.items())})"]
                if sum(self.reexecuted.values())
                else []
            )
            + (
                [f"batches committed   {self.batches_committed} (replayed {self.batches_replayed}), last txid {self.last_txid}"]
                if self.batches_committed is not None
                else []
            )
            + (
                [f"errors              {sum(self.errors.values())} ({', '.join(f'{c} {n}' for c, n in self.errors.items())}); the last:"]
                + [f"  {line}" for line in self.last_errors]
                if self.errors
                else []
            )
        )
