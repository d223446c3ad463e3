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


class RollingUpdate(BaseModel):
    """An update under way (``squall update``; :mod:`service.control.rolling`): workers move from ``from_code`` to ``to_code`` one at a time.

    ``from_placement``: the placement the old code ran with (None: dealt), so every supervisor plans the old workers exactly as
    they run. ``drain_all``: every old worker stops before any new one starts (an incompatible change). ``summary``: what the new
    code adds and removes. ``rollback_of``: set when this roll undoes a failed update (that version's number), with ``reason``. ``order``: the
    order workers are replaced in.
    Times are wall-clock seconds.
    """

    model_config = ConfigDict(frozen=True)

    from_code: int
    to_code: int
    started_at: float
    drain_all: bool = False
    from_placement: list[list[tuple[str, list[int]]]] | None = None
    summary: str = ""
    rollback_of: int | None = None
    reason: str | None = None
    order: list[int] | None = None
    """The order workers are replaced in (None: by index): workers that gain a component first, those that lose one last
    (:func:`service.control.rolling.roll_order`)."""


class CodeVersion(BaseModel):
    """One version of a topology's code, kept on the control topic under key ``<name>/v<code>`` (``squall update --to-version`` reads it).

    ``conf``: its ``-c`` overrides; ``artifact``: its dependency bundle (:attr:`TopologyRecord.artifact`); ``who``/``at``: who
    stored it and when (wall-clock seconds); ``summary``: what it changed.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    code: int
    source: str
    file_name: str
    conf: dict[str, Any] = Field(default_factory=dict)
    artifact: dict[str, Any] | None = None
    at: float = 0.0
    who: str = ""
    summary: str = ""

    @property
    def key(self) -> str:
        """Its key on the control topic (a topology name has no ``/``)."""
        return version_key(self.name, self.code)

    @staticmethod
    def of(rec: TopologyRecord, who: str = "") -> CodeVersion:
        """The version ``rec`` runs now."""
        return CodeVersion(
            name=rec.name,
            code=rec.code_version,
            source=rec.source,
            file_name=rec.file_name,
            conf=dict(rec.conf),
            artifact=rec.artifact,
            at=rec.changed_at,
            who=who,
        )

    def encode(self) -> bytes:
        """Its JSON value on the control topic."""
        return self.model_dump_json().encode()

    def record_fields(self) -> dict[str, Any]:
        """The fields of a :class:`TopologyRecord` that running this code sets: source, file name, ``-c`` keys, bundle, code version."""
        return {"source": self.source, "file_name": self.file_name, "conf": dict(self.conf), "artifact": self.artifact, "code_version": self.code}


def version_key(name: str, code: int) -> str:
    """The control topic's key of version ``code`` of topology ``name``.

    >>> version_key("wc", 3), parse_version_key("wc/v3"), parse_version_key("wc")
    ('wc/v3', ('wc', 3), None)
    """
    return f"{name}/v{code}"


def parse_version_key(key: str) -> tuple[str, int] | None:
    """``(name, code)`` of a version key, or None for a topology's own key."""
    name, sep, rest = key.rpartition("/v")
    return (name, int(rest)) if sep and name and rest.isdigit() else None


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
    code_version: int = 1
    """The code's version: 1 at submit, one more with each ``squall update`` (a rollback returns to an older one).
    Every version's code is kept on the control topic (:class:`CodeVersion`)."""
    placement: list[list[tuple[str, list[int]]]] | None = None
    """Which executors each worker runs (``[[component, [task, ...]], ...]`` per worker), set by a rolling update so every
    existing executor stays on its worker (:func:`service.control.rolling.keep_placement`); None: dealt by the scheduler
    (``rebalance`` deals again)."""
    update: RollingUpdate | None = None
    """The update under way (``squall update``), or None."""
    last_update: str | None = None
    """How the last update ended (one line: ``status`` shows it), or None."""
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
    if rec.update is not None:
        raise ControlError(f"[{rec.name}] cannot rebalance: an update to version {rec.update.to_code} is under way (see: squall status)")
    if workers is not None and workers < 1:
        raise ControlError(f"[{rec.name}] rebalance -n must be >= 1, got {workers}")
    for comp, n in executors.items():
        if comp not in tasks:
            raise ControlError(f"[{comp}] rebalance -e: no such component in {rec.name} (components: {sorted(tasks)})")
        if not 1 <= n <= tasks[comp]:
            raise ControlError(f"[{comp}] rebalance -e {comp}={n}: executors must be 1..{tasks[comp]} (its task count, fixed at submit)")
    merged = {**rec.executors, **executors}
    back = rec.rebalance_from if rec.status == Status.REBALANCING else rec.status
    return rec._next(
        now, status=Status.REBALANCING, workers=workers if workers is not None else rec.workers, executors=merged, rebalance_from=back, placement=None
    )


def rebalanced(rec: TopologyRecord, now: float) -> TopologyRecord:
    """The rebalance took effect: back to the status before it (ACTIVE, or INACTIVE as Storm keeps a deactivated topology)."""
    if rec.status != Status.REBALANCING:
        return rec
    return rec._next(now, status=rec.rebalance_from or Status.ACTIVE, rebalance_from=None)


def begin_update(
    rec: TopologyRecord,
    code: CodeVersion,
    placement: list[list[tuple[str, list[int]]]] | None,
    drain_all: bool,
    summary: str,
    now: float,
    order: list[int] | None = None,
) -> TopologyRecord:
    """Start rolling ``rec`` onto ``code`` (``squall update``; :mod:`service.control.rolling`).

    ``placement``: the workers' executors under the new code (None: dealt, as a ``--drain-all`` update is); ``order``: the
    order workers are replaced in (None: by index).
    Raises ControlError on a killed or rebalancing topology, or while another update is under way.

    >>> rec = TopologyRecord.new("wc", "v1", "wc.py", {}, now=1.0)
    >>> new = begin_update(rec, CodeVersion(name="wc", code=2, source="v2", file_name="wc.py"), None, False, "", now=2.0)
    >>> new.code_version, new.source, new.update.from_code, new.update.to_code
    (2, 'v2', 1, 2)
    """
    _alive(rec, "update")
    if rec.status == Status.REBALANCING:
        raise ControlError(f"[{rec.name}] cannot update while it rebalances; try again once `squall status` says {rec.rebalance_from or Status.ACTIVE}")
    if rec.update is not None:
        raise ControlError(f"[{rec.name}] an update to version {rec.update.to_code} is under way (see: squall status)")
    if code.code == rec.code_version:
        raise ControlError(f"[{rec.name}] version {code.code} is the one running")
    roll = RollingUpdate(
        from_code=rec.code_version, to_code=code.code, started_at=now, drain_all=drain_all, from_placement=rec.placement, summary=summary, order=order
    )
    return rec._next(now, **code.record_fields(), placement=placement, update=roll)


def update_failed(rec: TopologyRecord, old: CodeVersion, reason: str, now: float) -> TopologyRecord:
    """The update under way failed (a new worker crashed at start-up): roll back onto ``old``, the code it came from, the same way.

    The workers not yet replaced keep running the old code; the replaced ones are rolled back one
    at a time, in the reverse order (all at once for a ``--drain-all`` update). A rollback that fails is not rolled back
    again. Returns ``rec`` unchanged when there is nothing to undo.
    """
    roll = rec.update
    if roll is None or roll.rollback_of is not None or old.code != roll.from_code:
        return rec
    back = RollingUpdate(
        from_code=roll.to_code,
        to_code=roll.from_code,
        started_at=now,
        drain_all=roll.drain_all,
        from_placement=rec.placement,
        summary=f"rollback of version {roll.to_code}",
        rollback_of=roll.to_code,
        reason=reason,
        order=list(reversed(roll.order)) if roll.order is not None else None,
    )
    return rec._next(now, **old.record_fields(), placement=roll.from_placement, update=back)


def update_done(rec: TopologyRecord, to_code: int, now: float) -> TopologyRecord:
    """Every worker runs version ``to_code``: the update is over (``last_update`` says how). ``rec`` unchanged if another update is under way."""
    roll = rec.update
    if roll is None or roll.to_code != to_code:
        return rec
    if roll.rollback_of is not None:
        note = f"update to version {roll.rollback_of} failed and was rolled back to version {to_code}: {roll.reason}"
    else:
        note = (
            f"updated from version {roll.from_code} to {to_code}" + (" (drain-all)" if roll.drain_all else "") + (f": {roll.summary}" if roll.summary else "")
        )
    return rec._next(now, update=None, last_update=note)
