"""Typed topology configuration (Storm key names where Storm has them).

Precedence (lowest first): defaults < service file (``squall.yaml`` / ``SQUALL_*`` env)
< topology config < component config. :func:`resolve` merges the layers and validates;
the result is a :class:`TopologyConfig`. Every key states its unit and default.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from streams.exceptions import ConfigError

TRANSACTIONAL_MAX_PENDING = 5
"""Batches in flight per transactional spout when ``topology.max.spout.pending`` is not set."""


class TopologyConfig(BaseModel):
    """Validated config for one component (or the topology). Field aliases are the keys."""

    model_config = ConfigDict(populate_by_name=True, extra="allow", frozen=True)

    workers: int = Field(1, alias="topology.workers", ge=1, description="worker processes (count; default 1)")
    worker_gc_threshold: int = Field(
        50_000,
        alias="squall.worker.gc.threshold",
        ge=0,
        description="allocations between young collections of Python's cyclic GC in a worker (count; default "
        "50,000; 0 keeps Python's 700): a reliable topology keeps its pending records and tuples alive, and with "
        "Python's threshold the collector scanned them over and over (see docs/design.md, 'Garbage collection')",
    )
    ackers: int = Field(
        1,
        alias="topology.acker.executors",
        ge=0,
        description="acker tasks = partitions of __acker (count; 0 turns tracking off; default 1)",
    )
    message_timeout_secs: float = Field(30.0, alias="topology.message.timeout.secs", gt=0, description="tree timeout (seconds; default 30)")
    max_spout_pending: int | None = Field(
        None,
        alias="topology.max.spout.pending",
        ge=1,
        description="in flight per spout task, at most: message ids (count; a tree of several records counts each, "
        "and one next_tuple may pass the bound by less than one tree; "
        "default: adaptive, see squall.spout.pending.*) or, "
        "for a transactional spout, batches (count; default 5). Set, it is a fixed bound as in Storm",
    )
    pending_target_latency_secs: float = Field(
        1.0,
        alias="squall.spout.pending.target.latency.secs",
        gt=0,
        description="complete latency the adaptive bound on trees in flight aims at (seconds; default 1; "
        "streams.runtime.pending_bound); used when topology.max.spout.pending is not set",
    )
    pending_initial: int = Field(
        100, alias="squall.spout.pending.initial", ge=1, description="the adaptive bound's start (message ids in flight per task; default 100)"
    )
    pending_max: int = Field(
        20_000,
        alias="squall.spout.pending.max",
        ge=1,
        description="the adaptive bound's ceiling (message ids in flight per task; default 20000): "
        "memory is at most this many records per task, plus one tree of records",
    )
    tree_records: int = Field(
        200,
        alias="squall.spout.tree.records",
        ge=1,
        description="records of one source partition a KafkaSpout sends per tree, at least once (count; default 200; "
        "1: a tree per record, as in Storm). A failed tree replays each of its records as a tree of its own",
    )
    tick_tuple_freq_secs: float | None = Field(None, alias="topology.tick.tuple.freq.secs", gt=0, description="tick tuple period (seconds; default off)")
    flush_interval_secs: float = Field(
        0.025,
        alias="squall.flush.interval.secs",
        gt=0,
        description="how often an executor flushes outputs then acker ops (seconds; default 0.025; was 0.05, see docs/design.md)",
    )
    flush_when_idle: bool = Field(
        True,
        alias="squall.flush.when.idle",
        description="an executor also flushes as soon as its input is drained (a consume call returned less than "
        "squall.consume.batch records), instead of waiting for squall.flush.interval.secs, and sends what its producer "
        "holds at once instead of after squall.kafka.linger.ms: below full speed a hop then costs its round trip, not the "
        "flush interval or the linger (default true; see docs/design.md, 'Latency below full speed')",
    )
    consumer_reopen_after_secs: float = Field(
        30.0,
        alias="squall.consumer.reopen.after.secs",
        gt=0,
        description="an executor whose offset commits have failed this long, with no success in between, replaces its "
        "consumer with a new one at the positions it processed: librdkafka's assign-only consumers can lose their group "
        "coordinator for good after a broker fault (seconds; default 30; see docs/design.md, 'Broker faults')",
    )
    max_retries: int = Field(
        5,
        alias="squall.spout.max.retries",
        ge=0,
        description="replays of one source record before the dead-letter topic (count; default 5)",
    )
    retry_initial_delay_secs: float = Field(
        0.0, alias="squall.spout.retry.initial.delay.secs", ge=0, description="a KafkaSpout's delay before a failed record's first replay (seconds; default 0)"
    )
    retry_multiplier: float = Field(
        2.0, alias="squall.spout.retry.multiplier", ge=1, description="each later replay waits this many times longer (factor; default 2)"
    )
    retry_max_delay_secs: float = Field(
        10.0, alias="squall.spout.retry.max.delay.secs", ge=0, description="the longest wait before a replay (seconds; default 10)"
    )
    commit_period_secs: float = Field(
        1.0,
        alias="squall.spout.commit.period.secs",
        gt=0,
        description="how often a spout commits its source offsets, which are contiguous acked records (seconds; default 1; "
        "storm-kafka-client's offset.commit.period.ms)",
    )
    bolt_commit_period_secs: float = Field(
        1.0,
        alias="squall.bolt.commit.period.secs",
        gt=0,
        description="how often a bolt commits the offsets of its input it has flushed (seconds; default 1): a crashed bolt re-reads at most this much",
    )
    batch_records: int = Field(
        30_000,
        alias="squall.batch.records",
        ge=1,
        description=(
            "a transactional spout's records per source partition per batch, at most (count; default 30000): "
            "a batch takes what has arrived, so batches grow to it only under load"
        ),
    )
    state_url: str | None = Field(
        None,
        alias="squall.state.url",
        description="where committer bolts keep state: sqlite:///path.db (default: <data dir>/state/<topology>.db), postgresql://user@host/db",
    )
    broker_embedded: bool = Field(
        False,
        alias="squall.broker.embedded",
        description="set by Squall when it runs on its embedded broker (tansu), whose read_committed shows aborted "
        "records: an exactly-once Kafka sink refuses it",
    )
    show_streams: list[str] = Field(
        default_factory=list,
        alias="squall.run.show",
        description="streams whose tuples squall run --show prints, as component:stream (set by squall run; each is "
        "written as JSON objects to squall.T.__show.<component>.<stream>)",
    )
    state_sqlite_shared: bool = Field(
        False,
        alias="squall.state.sqlite.shared",
        description="every supervisor reaches the same SQLite state file (several supervisors on one machine); "
        "default false: with more than one supervisor, a worker whose stateful bolts or committers keep state in "
        "SQLite is not started (a task that moved would find another machine's empty file)",
    )
    state_checkpoint_interval_ms: int = Field(
        1000,
        alias="topology.state.checkpoint.interval.ms",
        gt=0,
        description="how often a stateful bolt task checkpoints its state and acks what it applied (milliseconds; Storm's key; default 1000)",
    )
    state_dedupe_retention_secs: float = Field(
        600.0,
        alias="squall.state.dedupe.retention.secs",
        gt=0,
        description="a stateful bolt keeps the ids of the tuples it applied at least this long, and until the spouts committed "
        "past their records (seconds; default 600): a bolt upstream that restarts re-reads what it ran since its last offset "
        "commit, and a copy arriving later than this after its original is counted again",
    )
    auto_task_hooks: list[str] = Field(
        default_factory=list,
        alias="topology.auto.task.hooks",
        description="task hooks added to every task (Storm's key): each 'module:Class' or 'module.Class' is instantiated with no "
        "arguments once per task (streams.TaskHook; default none)",
    )
    debug: bool = Field(
        False,
        alias="topology.debug",
        description="sampled tuple tracing: every event of a sampled tree goes to squall.T.__trace (squall trace); "
        "squall.trace.sample.rate says which trees (default off)",
    )
    trace_sample_rate: float = Field(
        0.01,
        alias="squall.trace.sample.rate",
        ge=0,
        le=1,
        description="with topology.debug, the fraction of trees traced, chosen by root id so every executor agrees (default 0.01)",
    )
    error_throttle_interval_secs: float = Field(
        10.0,
        alias="topology.error.throttle.interval.secs",
        gt=0,
        description="the window of the error throttle: an executor publishes at most topology.max.error.report.per.interval "
        "errors to squall.T.__errors per window; the rest are only counted (seconds; default 10, as Storm)",
    )
    max_error_report_per_interval: int = Field(
        5, alias="topology.max.error.report.per.interval", ge=0, description="errors an executor publishes per throttle window (default 5, as Storm)"
    )
    errors_brief_per_interval: int = Field(
        100,
        alias="squall.errors.brief.per.interval",
        ge=0,
        description="past topology.max.error.report.per.interval, errors an executor still publishes per throttle window without "
        "their traceback, in a ring of as many slots per task (so squall dlq NAME show can say why a record died; default 100)",
    )
    errors_kept_per_task: int = Field(
        10, alias="squall.errors.kept.per.task", ge=1, description="error reports squall.T.__errors keeps per task (compacted; default 10)"
    )
    stats_interval_secs: float = Field(1.0, alias="squall.stats.interval.secs", gt=0, description="stats snapshot period (seconds; default 1)")
    worker_hang_timeout_secs: float = Field(
        120.0,
        alias="squall.worker.hang.timeout.secs",
        ge=0,
        description="an executor whose loop has not come round for this long (a bolt stuck in execute, a client that "
        "never returns), or a worker process that stopped altogether, is hung: the worker is restarted (seconds; "
        "default 120; 0: never)",
    )
    acker_buckets: int = Field(3, alias="squall.acker.buckets", ge=2, description="RotatingMap buckets (default 3)")
    acker_persist_after_secs: float = Field(
        2.0,
        alias="squall.acker.persist.after.secs",
        ge=0,
        description="a pending tree reaches the acker's changelog once this old; younger ones are kept safe by "
        "committing the acker's input no further than their first op (seconds; default 2; 0: every flush writes "
        "every changed tree; acker.durable)",
    )
    acker_runtime: str = Field(
        "native",
        alias="squall.acker.runtime",
        pattern="^(native|faust)$",
        description="acker runtime: native (confluent-kafka, default) or faust (faust-streaming agent + Table)",
    )
    fetch_wait_max_ms: int = Field(50, alias="squall.kafka.fetch.wait.max.ms", ge=1, description="ms; default 50")
    max_partition_fetch_bytes: int = Field(
        8 << 20,
        alias="squall.kafka.max.partition.fetch.bytes",
        ge=1024,
        description="the most one fetch returns per partition (bytes; default 8 MiB, librdkafka's is 1 MiB): "
        "the embedded broker answers a fetch only after fetch.wait.max.ms, so this caps a bolt's input at about "
        "this many bytes per fetch wait (see docs/design.md, 'Fetch size')",
    )
    session_timeout_ms: int = Field(6000, alias="squall.kafka.session.timeout.ms", ge=1000, description="ms; default 6000")
    linger_ms: int = Field(
        5,
        alias="squall.kafka.linger.ms",
        ge=0,
        description="producer linger (ms; default 5, was 20): the spout's tuples and every acker op wait this long "
        "before they are sent (bolts' outputs also leave at each flush), so each costs a tree up to this much per hop "
        "(see docs/design.md, 'Linger')",
    )
    compression_type: Literal["none", "gzip", "snappy", "lz4", "zstd"] = Field(
        "lz4",
        alias="squall.kafka.compression.type",
        description="how executors' producers compress their batches (Kafka's compression.type; default lz4): the "
        "tuples' JSON shrinks about 3x on the network and the broker's disk for a few percent of a core "
        "(see docs/design.md, 'Bytes on the wire')",
    )
    batch_size: int = Field(500, alias="squall.consume.batch", ge=1, description="records per consume call (count; default 500)")
    transfer_batch_size: int = Field(
        500,
        alias="squall.transfer.batch.size",
        ge=1,
        description="tuples a task sends one partition of a bolt's topic in one Kafka record, at most (count; default 500, "
        "was 100; 1: a record per tuple). Storm's topology.transfer.batch.size (see docs/design.md, 'Packs')",
    )
    transfer_runs: bool = Field(
        True,
        alias="squall.transfer.runs",
        description="send tuples in one tree in runs, one edge id per run (version 6 packs; docs/design.md, 'Runs'); "
        "false writes version 4 packs, which Squall before runs can read: for a rolling upgrade of the workers",
    )
    topic_replication_factor: int = Field(
        -1,
        alias="squall.topic.replication.factor",
        ge=-1,
        description="replicas of each topic Squall creates (count; default -1: the broker's default.replication.factor; "
        "min.insync.replicas is the broker's too)",
    )
    topic_retention_ms: int = Field(
        7 * 24 * 3600 * 1000,
        alias="squall.topic.retention.ms",
        ge=-1,
        description="retention of the topics between components, the dead-letter and output topics (ms; default 7 days; "
        "-1 keeps everything): a backstop, since consumed records are purged (squall.topic.purge.interval.secs)",
    )
    purge_interval_secs: float = Field(
        30.0,
        alias="squall.topic.purge.interval.secs",
        ge=0,
        description="how often an executor deletes the records of its input that it has committed, with DeleteRecords "
        "(seconds; default 30; 0 never purges; Kafka Streams purges its repartition topics the same way). The "
        "embedded broker cannot purge: Squall turns it off there",
    )
    spark_master: str = Field(
        "local[*]",
        alias="spark.master",
        description="Spark master of SparkBolt queries: local[*] (default), spark://host:7077, k8s://https://host:443, yarn",
    )
    spark_trigger_secs: float = Field(0.1, alias="squall.spark.trigger.secs", gt=0, description="SparkBolt micro-batch trigger (seconds; default 0.1)")
    spark_max_offsets_per_trigger: int | None = Field(
        None, alias="squall.spark.max.offsets.per.trigger", ge=1, description="records per SparkBolt micro-batch (count; default all available)"
    )
    spark_max_tasks: int | None = Field(None, alias="squall.spark.max.tasks", ge=1, description="Spark tasks per micro-batch (count; default the cores)")
    spark_checkpoint_dir: str | None = Field(
        None, alias="squall.spark.checkpoint.dir", description="SparkBolt checkpoints (path; default <service data dir>/<topology>/spark)"
    )

    @property
    def batches_in_flight(self) -> int:
        """A transactional spout's batches in flight: ``topology.max.spout.pending``, else :data:`TRANSACTIONAL_MAX_PENDING` (Trident users keep it small)."""
        return self.max_spout_pending or TRANSACTIONAL_MAX_PENDING

    def get(self, key: str, default: Any = None) -> Any:
        """Look a value up by its key (alias) or attribute name."""
        for name, f in type(self).model_fields.items():
            if f.alias == key or name == key:
                return getattr(self, name)
        extra = self.model_extra or {}
        return extra.get(key, default)

    def as_dict(self) -> dict[str, Any]:
        """The config as a ``dict`` keyed by Storm's names (what ``open``/``prepare`` receive)."""
        return self.model_dump(by_alias=True)


KEYS = {f.alias: name for name, f in TopologyConfig.model_fields.items() if f.alias}


def env_layer(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Storm keys from ``SQUALL_*`` env vars.

    ``topology.max.spout.pending`` is read from ``SQUALL_TOPOLOGY_MAX_SPOUT_PENDING`` (and
    ``squall.x.y`` from ``SQUALL_X_Y``).
    """
    environ = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    for key in KEYS:
        stem = key[len("squall.") :] if key.startswith("squall.") else key
        var = "SQUALL_" + stem.replace(".", "_").upper()
        if var in environ:
            out[key] = environ[var]
    return out


def resolve(*layers: Mapping[str, Any] | None, where: str = "topology") -> TopologyConfig:
    """Merge config layers (later wins) and validate.

    Raises :class:`ConfigError` naming ``where`` (the component id) and the bad key.
    """
    merged: dict[str, Any] = {}
    for layer in layers:
        if layer:
            merged.update(layer)
    try:
        return TopologyConfig.model_validate(merged)
    except ValidationError as exc:
        errs = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"[{where}] invalid config: {errs}") from exc


def sources(*layers: tuple[str, Mapping[str, Any] | None]) -> dict[str, str]:
    """Where each key of the resolved config came from: the name of the last layer that set it, else ``default``.

    ``layers``: ``(name, layer)`` in :func:`resolve`'s order (later wins), e.g. ``("service",
    service_conf), ("topology", topology.conf)``. Keys: every :class:`TopologyConfig` key by
    its Storm name, and any other key a layer sets.

    >>> src = sources(("service", {"topology.workers": 2}), ("topology", {"topology.workers": 4, "topology.debug": True}))
    >>> src["topology.workers"], src["topology.debug"], src["topology.message.timeout.secs"]
    ('topology', 'topology', 'default')
    """
    out = dict.fromkeys(KEYS, "default")
    for name, layer in layers:
        for key in layer or {}:
            out[key] = name
    return out


__all__ = ["KEYS", "TRANSACTIONAL_MAX_PENDING", "TopologyConfig", "env_layer", "resolve", "sources"]
