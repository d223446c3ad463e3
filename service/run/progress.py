"""Live progress for ``squall run``: a rich table on a terminal, a log line otherwise."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

from rich.console import Console
from rich.live import Live
from rich.table import Table

if TYPE_CHECKING:
    from service.run.runner import Job


class Progress:
    """Callable passed to :meth:`service.run.runner.Job.wait`: acked, failed, pending, rate."""

    def __init__(self, console: Console | None = None, every_s: float = 0.5) -> None:
        self.console = console or Console(stderr=True)
        self.live: Live | None = None
        self.every_s = every_s if self.console.is_terminal else 5.0
        self.last = 0.0
        self.last_acked = 0.0
        self.last_t = time.monotonic()

    def table(self, job: Job) -> Table:
        """The live progress table of ``job``."""
        b = job.board
        assert b is not None
        now = time.monotonic()
        acked = b.total("spout", "acked")
        rate = (acked - self.last_acked) / max(now - self.last_t, 1e-6)
        self.last_acked, self.last_t = acked, now
        t = Table(title=f"squall run {job.name}", show_header=True)
        for col in ("records", "acked", "failed", "replayed", "pending", "rate (acked/s)", "p99 latency"):
            t.add_column(col, justify="right")
        t.add_row(
            f"{job.records:,}",
            f"{int(acked):,}",
            f"{int(b.total('spout', 'failed')):,}",
            f"{int(b.total('spout', 'replayed')):,}",
            f"{int(b.gauge('spout', 'pending')):,}",
            f"{rate:,.0f}",
            f"{b.quantile('spout', 'complete_latency', 0.99) * 1000:.0f} ms",
        )
        return t

    def __call__(self, job: Job) -> None:
        """Refresh the display (at most every refresh interval)."""
        now = time.monotonic()
        if now - self.last < self.every_s:
            return
        self.last = now
        table = self.table(job)
        if self.console.is_terminal:
            if self.live is None:
                self.live = Live(table, console=self.console, refresh_per_second=4)
                self.live.start()
            else:
                self.live.update(table)
        else:
            row = table.columns
            print(" | ".join(f"{c.header}={next(iter(c.cells))}" for c in row), file=sys.stderr, flush=True)

    def close(self) -> None:
        """Stop the live display."""
        if self.live is not None:
            self.live.stop()
            self.live = None
