"""The desired state of every topology: what Storm keeps in Nimbus and ZooKeeper.

One :class:`TopologyRecord` per topology lives in the compacted control topic
``squall.__control`` (key: the topology name; value: the record as JSON; a tombstone
removes the topology). It holds the topology file's source (as ``storm jar`` uploads the
jar), the config overrides given at submit, the status, and the parallelism. Supervisors
and workers read it; the CLI's verbs write it. Every transition is a pure function here
that returns a new record or raises :class:`ControlError` naming the topology.

>>> rec = TopologyRecord.new("wc", "def topology(): ...", "wc.py", {}, now=100.0)
>>> rec.status, rec.version
(<Status.ACTIVE: 'ACTIVE'>, 1)
>>> paused = deactivate(rec, now=101.0)
>>> paused.status, paused.spouts_active, paused.version
(<Status.INACTIVE: 'INACTIVE'>, False, 2)
>>> kill(paused, wait_s=5.0, now=102.0).kill_at
107.0
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from service.exceptions import ControlError


class Status(StrEnum):
    """A topology's status, as ``storm list`` shows it."""

    ACTIVE = "ACTIVE"
    """Spouts emit."""
    INACTIVE = "INACTIVE"
    """Spouts paused (``deactivate``); bolts keep draining."""
    REBALANCING = "REBALANCING"
    """Workers or executors are changing (``rebalance``); spouts emit if the topology was active before (``rebalance_from``)."""
    KILLED = "KILLED"
    """Spouts paused; the workers stop at ``kill_at`` and the topology is removed."""


class TopologyRecord(BaseModel):
    """One topology's desired state (the control topic's value, JSON; ``schemas/control.schema.json``).

    ``source``: the topology file's text; ``file_name``: its original name (for errors).
    ``conf``: config overrides from ``submit -c`` (the topology layer, above the file's own).
    ``workers``: worker processes (``None``: the topology's ``topology.workers``).
    ``executors``: ``component -> executors`` overrides from ``rebalance -e``.
    ``version``: grows with every change; workers restart only when their own plan changes.
    ``rebalance_from``: while REBALANCING, the status it returns to (Storm keeps a deactivated
    topology inactive through a rebalance).
    Times are wall-clock seconds.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    source: str
    file_name: str
    conf: dict[str, Any] = Field(default_factory=dict)
    status: Status = Status.ACTIVE
    workers: int | None = None
    executors: dict[str, int] = Field(default_factory=dict)
    version: int = 1
    submitted_at: float = 0.0
    changed_at: float = 0.0
    kill_at: float | None = None
    rebalance_from: Status | None = None
    log_levels: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """``logger -> {"level": LEVEL, "until": wall seconds or None}`` (``squall set_log_level``; :mod:`service.control.log_levels`)."""
    debug: dict[str, Any] | None = None
    """Sampled tracing set at run time (``squall debug``, the UI's debug action): ``{"on": bool, "sampling_pct": 0..100}``;
    None: the topology's own ``topology.debug`` and ``squall.trace.sample.rate``. Workers apply it live."""
    artifact: dict[str, Any] | None = None
    """The dependency bundle shipped with the topology (``submit --requirements/--package/--wheel``; :mod:`service.deps`):
    ``{"sha256", "bytes", "requirements", "wheels": [{"file", "sha256"}], "package"}``; None: it needs only what the supervisors have."""
    actions: list[dict[str, Any]] = Field(default_factory=list)
    """The last :data:`ACTIONS_KEPT` actions on this topology, oldest first: ``{"action", "detail", "who", "at"}``
    (who: ``user@host`` of a verb, or the UI's ``name (ui, address)``; at: wall-clock seconds)."""

    @staticmethod
    def new(name: str, source: str, file_name: str, conf: dict[str, Any], now: float) -> TopologyRecord:
        """A new topology record, ACTIVE, version 1."""
        return TopologyRecord(name=name, source=source, file_name=file_name, conf=dict(conf), submitted_at=now, changed_at=now)

    @property
    def spouts_active(self) -> bool:
        """Whether spouts may emit (Storm: activated)."""
        if self.status == Status.REBALANCING:
            return self.rebalance_from != Status.INACTIVE
        return self.status == Status.ACTIVE

    def killed_by(self, now: float) -> bool:
        """True once a killed topology's wait is over: its workers must be gone."""
        return self.status == Status.KILLED and self.kill_at is not None and now >= self.kill_at

    def encode(self) -> bytes:
        """The record's JSON value on the control topic (``schemas/control.schema.json``)."""
        return self.model_dump_json().encode()

    @staticmethod
    def decode(raw: bytes) -> TopologyRecord:
        """Raises ``pydantic.ValidationError`` on a malformed record."""
        return TopologyRecord.model_validate_json(raw)

    def _next(self, now: float, **changes: Any) -> TopologyRecord:
        return self.model_copy(update={**changes, "version": self.version + 1, "changed_at": now})


ACTIONS_KEPT = 50
"""How many actions a record keeps (:attr:`TopologyRecord.actions`)."""


def audited(rec: TopologyRecord, action: str, who: str, now: float, detail: str = "") -> TopologyRecord:
    """``rec`` with ``action`` appended to its actions (the last :data:`ACTIONS_KEPT` kept); the version stays.

    >>> rec = audited(TopologyRecord.new("wc", "", "wc.py", {}, now=1.0), "deactivate", "ann@h1", 2.0)
    >>> rec.actions, rec.version
    ([{'action': 'deactivate', 'detail': '', 'who': 'ann@h1', 'at': 2.0}], 1)
    """
    entry = {"action": action, "detail": detail, "who": who, "at": now}
    return rec.model_copy(update={"actions": [*rec.actions, entry][-ACTIONS_KEPT:]})


def set_debug(rec: TopologyRecord, on: bool, sampling_pct: float, now: float) -> TopologyRecord:
    """Turn sampled tracing on (at ``sampling_pct`` percent of the trees) or off, live (Storm UI's debug action).

    The version stays: no worker restarts; each worker's control watcher tells its executors.
    Raises ControlError for a percentage outside 0..100 or on a killed topology.
    """
    _alive(rec, "change debug")
    if not 0 <= sampling_pct <= 100:
        raise ControlError(f"[{rec.name}] debug sampling must be 0..100 percent, got {sampling_pct:g}")
    return rec.model_copy(update={"debug": {"on": on, "sampling_pct": float(sampling_pct)}, "changed_at": now})


def trace_rate(rec: TopologyRecord) -> float | None:
    """The sample rate (0..1; 0: off) ``rec.debug`` sets, or None to keep the topology's own.

    >>> trace_rate(set_debug(TopologyRecord.new("wc", "", "wc.py", {}, now=1.0), True, 10, now=2.0))
    0.1
    """
    if rec.debug is None:
        return None
    return float(rec.debug["sampling_pct"]) / 100 if rec.debug["on"] else 0.0


def _alive(rec: TopologyRecord, verb: str) -> None:
    if rec.status == Status.KILLED:
        raise ControlError(f"[{rec.name}] cannot {verb}: the topology is being killed")


def activate(rec: TopologyRecord, now: float) -> TopologyRecord:
    """Resume the spouts (Storm ``activate``). Raises ControlError on a killed topology."""
    _alive(rec, "activate")
    return rec if rec.status == Status.ACTIVE else rec._next(now, status=Status.ACTIVE, rebalance_from=None)


def deactivate(rec: TopologyRecord, now: float) -> TopologyRecord:
    """Pause the spouts (Storm ``deactivate``); bolts keep draining."""
    _alive(rec, "deactivate")
    return rec if rec.status == Status.INACTIVE else rec._next(now, status=Status.INACTIVE, rebalance_from=None)


def kill(rec: TopologyRecord, wait_s: float, now: float) -> TopologyRecord:
    """Deactivate now; stop the workers ``wait_s`` seconds later (Storm ``kill -w``)."""
    if wait_s < 0:
        raise ControlError(f"[{rec.name}] kill -w must be >= 0 seconds, got {wait_s}")
    return rec._next(now, status=Status.KILLED, kill_at=now + wait_s)


def set_log_levels(rec: TopologyRecord, levels: dict[str, dict[str, Any]], resets: list[str], now: float) -> TopologyRecord:
    """Set loggers' levels (``levels``), and drop ``resets`` (back to their own level), in the workers (Storm ``set_log_level``).

    The version stays: no worker is replanned or restarted; each worker's control watcher
    applies the levels. Expired levels are dropped. Raises ControlError on a killed topology.
    """
    _alive(rec, "set log levels")
    kept = {name: v for name, v in rec.log_levels.items() if name not in resets and (v.get("until") is None or now < v["until"])}
    return rec.model_copy(update={"log_levels": {**kept, **levels}, "changed_at": now})


def rebalance(rec: TopologyRecord, now: float, workers: int | None, executors: dict[str, int], tasks: dict[str, int]) -> TopologyRecord:
    """Change workers and executors (Storm ``rebalance -n -e``); tasks stay fixed.

    ``tasks``: ``component -> task count`` of the topology. Raises ControlError naming the
    component for an unknown one, or for executors outside ``1 .. tasks``.
    """
    _alive(rec, "rebalance")
    if workers is not None and workers < 1:
        raise ControlError(f"[{rec.name}] rebalance -n must be >= 1, got {workers}")
    for comp, n in executors.items():
        if comp not in tasks:
            raise ControlError(f"[{comp}] rebalance -e: no such component in {rec.name} (components: {sorted(tasks)})")
        if not 1 <= n <= tasks[comp]:
            raise ControlError(f"[{comp}] rebalance -e {comp}={n}: executors must be 1..{tasks[comp]} (its task count, fixed at submit)")
    merged = {**rec.executors, **executors}
    back = rec.rebalance_from if rec.status == Status.REBALANCING else rec.status
    return rec._next(now, status=Status.REBALANCING, workers=workers if workers is not None else rec.workers, executors=merged, rebalance_from=back)


def rebalanced(rec: TopologyRecord, now: float) -> TopologyRecord:
    """The rebalance took effect: back to the status before it (ACTIVE, or INACTIVE as Storm keeps a deactivated topology)."""
    if rec.status != Status.REBALANCING:
        return rec
    return rec._next(now, status=rec.rebalance_from or Status.ACTIVE, rebalance_from=None)
