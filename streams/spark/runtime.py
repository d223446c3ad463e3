"""Runs a SparkBolt: a Spark driver inside a Squall worker process.

:class:`SparkBoltExecutor` builds the SparkSession (``spark.master`` from the config,
``local[*]`` by default), then the query

    squall-kafka source (squall.T.<bolt>, all partitions = the bolt's tasks)
      -> mapInArrow(BoltProcessor)        # user function, anchoring, routing; the task
                                          # produces and flushes its outputs, returns its acks
      -> foreachBatch(BoltBatchCommit)    # in the driver: coalesced acks, state, stats

with ``trigger(processingTime=squall.spark.trigger.secs)`` (default 100 ms) and a
checkpoint under ``squall.spark.checkpoint.dir`` (default ``<run dir>/spark/<bolt>``).
A restarted worker resumes from that checkpoint. ``spark.*`` keys in the topology or
component config are passed to the SparkSession.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from typing_extensions import override

from streams.exceptions import FatalError
from streams.kafka.clients import producer_config
from streams.model.tuple import SYSTEM_COMPONENT
from streams.monitoring.board import StatsBoard
from streams.monitoring.stats import ExecutorStats, LogHistogram
from streams.runtime.executor import Executor, ExecutorEnv
from streams.wire.codec import encode_tuple
from streams.wire.naming import component_topic

log = logging.getLogger("squall.spark.runtime")


def session_conf(conf: Any) -> dict[str, str]:
    """SparkSession settings: Squall's defaults, then every ``spark.*`` config key."""
    cores = os.cpu_count() or 1
    out = {
        "spark.master": conf.spark_master,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(cores),
        "spark.python.worker.reuse": "true",
        "spark.sql.streaming.stopTimeout": "30s",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
    }
    for k, v in (conf.model_extra or {}).items():
        if k.startswith("spark."):
            out[k] = str(v)
    return out


def build_session(conf: Any, app_name: str) -> Any:
    """A SparkSession for ``conf`` with the ``squall-kafka`` data source registered."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from streams.spark.datasource import register

    builder = SparkSession.builder.appName(app_name)
    for k, v in session_conf(conf).items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    register(spark)
    return spark


def start_bolt_query(
    spark: Any,
    *,
    topology_file: str,
    name: str,
    component: str,
    conf: Any,
    bootstrap: str,
    checkpoint: str,
    overrides: dict[str, Any] | None = None,
    service_conf: dict[str, Any] | None = None,
    worker: str = "spark",
    consumer: dict[str, Any] | None = None,
    producer: dict[str, Any] | None = None,
) -> Any:
    """Start the SparkBolt query of ``component``; returns the StreamingQuery.

    ``consumer`` / ``producer``: more librdkafka settings for the source's reads and for
    the tasks' and the driver's producers.
    """
    from streams.spark.bolt import OUT_SCHEMA_DDL, BoltProcessor
    from streams.spark.bolt_commit import BoltBatchCommit

    overrides = overrides or {}
    service_conf = service_conf or {}
    reader = (
        spark.readStream.format("squall-kafka")
        .option("bootstrap.servers", bootstrap)
        .option("subscribe", component_topic(name, component))
        .option("maxTasks", str(conf.spark_max_tasks or os.cpu_count() or 1))
        .option("kafka.fetch.wait.max.ms", str(conf.fetch_wait_max_ms))
    )
    if conf.spark_max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(conf.spark_max_offsets_per_trigger))
    for k, v in (consumer or {}).items():
        reader = reader.option(f"kafka.{k}", str(v))
    # the settings of every executor's producer (idempotent, compressed), as a Python bolt's outputs have
    processor = BoltProcessor(topology_file, name, overrides, service_conf, component, producer_config(bootstrap, conf, producer))
    out = reader.load().mapInArrow(processor, OUT_SCHEMA_DDL)
    writer = (
        out.writeStream.foreachBatch(BoltBatchCommit(processor, ackers=conf.ackers, worker=worker))
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime=f"{int(conf.spark_trigger_secs * 1000)} milliseconds")
        .queryName(f"{name}.{component}".replace("-", "_").replace(".", "_"))
    )
    return writer.start()


def warm_up(query: Any, producer: Any, topic: str, partitions: int, stop: Any, tick: Callable[[], None], timeout_s: float = 120.0) -> None:
    """Run one real micro-batch before the bolt reports ready.

    The first micro-batch starts Spark's Python workers for the source and the processor
    (several seconds on 2 cores). One untracked ``__warmup`` record per partition (skipped
    by the processor, never seen by user code) pays that cost before any tree is waiting.
    ``tick()`` is called while waiting (the executor publishes its stats: it is alive).
    """
    from streams.spark.bolt import WARMUP_STREAM

    for p in range(partitions):
        producer.produce(topic, encode_tuple(WARMUP_STREAM, SYSTEM_COMPONENT, -1, [], {}, epoch=0), partition=p)
    producer.flush(10)
    deadline = time.monotonic() + timeout_s
    while query.isActive and not stop.is_set() and time.monotonic() < deadline:
        if any(p.get("numInputRows") for p in query.recentProgress):
            return
        tick()
        time.sleep(0.1)


class SparkBoltExecutor(Executor):
    """The executor of a SparkBolt: one Spark driver per bolt (its tasks are Spark's).

    Publishes ``kind="spark"`` stats (micro-batches, input rows, batch duration) from the
    query's progress; the bolt's own counters come from the per-batch commits
    (:mod:`streams.spark.bolt_commit`).
    Raises FatalError (naming the component) when the query dies.
    """

    kind = "spark"

    def __init__(self, env: ExecutorEnv) -> None:
        super().__init__(env)
        default_dir = env.workdir / "spark"
        self.checkpoint = str(Path(self.conf.spark_checkpoint_dir or default_dir) / self.topology.name / self.component)
        self.query: Any = None
        self._last_batch = -1
        # The bolt's own counters are published per micro-batch by BoltBatchCommit (on Spark's
        # callback thread); fold them back here so this worker's /metrics has them.
        self.bolt_stats = ExecutorStats(self.topology.name, self.component, "bolt", self.worker)
        self._board: Any = None

    @override
    def all_stats(self) -> list[ExecutorStats]:
        return [self.stats, self.bolt_stats]

    def _fold_bolt_stats(self) -> None:
        """Add the per-batch snapshots published since the last call (each is a delta with its own instance) to ``bolt_stats``, then forget them.

        O(new batches), bounded memory.
        """
        if self._board is None:
            self._board = StatsBoard(self.bootstrap, self.topology.name)
        self._board.poll(0)
        totals = self.bolt_stats
        for snap in self._board.latest.values():
            if snap["component"] == self.component and snap["kind"] == "bolt":
                for k, v in snap["counters"].items():
                    totals.inc(k, v)
                if "execute_latency" in snap["hists"]:
                    totals.hist("execute_latency").merge(LogHistogram.from_json(snap["hists"]["execute_latency"]))
        self._board.latest.clear()

    def _update_gauges(self) -> None:
        self._fold_bolt_stats()
        q = self.query
        for p in q.recentProgress if q is not None else []:
            batch = p.get("batchId", -1)
            if batch <= self._last_batch or not p.get("numInputRows"):
                continue  # seen, or an empty trigger
            self._last_batch = batch
            self.stats.gauges["spark_batch_id"] = batch
            rate = p.get("processedRowsPerSecond") or 0.0
            self.stats.gauges["spark_input_rows_per_second"] = rate if math.isfinite(rate) else 0.0
            self.stats.inc("spark_batches")
            self.stats.inc("spark_input_rows", p["numInputRows"])
            duration = p.get("durationMs", {}).get("triggerExecution", 0) / 1000.0
            self.stats.hist("spark_batch_duration").record(duration)
            if duration > 5:
                log.info("[%s] slow micro-batch %d: %.1f s for %d rows %s", self.component, batch, duration, p["numInputRows"], p.get("durationMs"))

    def _run(self) -> None:
        spark = build_session(self.conf, f"squall-{self.topology.name}-{self.component}")
        try:
            self.query = start_bolt_query(
                spark,
                topology_file=self.env.topology_file,
                name=self.topology.name,
                component=self.component,
                conf=self.conf,
                bootstrap=self.bootstrap,
                checkpoint=self.checkpoint,
                overrides=dict(self.env.topology_overrides),
                service_conf=dict(self.env.service_conf),
                worker=self.worker,
                consumer=self.kafka.get("consumer"),
                producer=self.kafka.get("producer"),
            )
            log.info("[%s] Spark query started (master %s, checkpoint %s)", self.component, self.conf.spark_master, self.checkpoint)
            cdef = self.topology.components[self.component]
            warm_up(
                self.query,
                self.producer,
                component_topic(self.topology.name, self.component),
                cdef.num_tasks,
                self.stop_event,
                lambda: self._maybe_stats(time.monotonic()),
            )
            self.stats.tasks = list(cdef.task_ids)  # ready: Spark owns every task
            self.assigned.set()
            self.stats.gauges["tasks"] = cdef.num_tasks
            while not self.stop_event.is_set():
                if not self.query.isActive:
                    raise FatalError(f"[{self.component}] Spark query stopped: {self.query.exception()}")
                self.query.awaitTermination(0.5)
                self._maybe_stats(time.monotonic())
        finally:
            if self.query is not None and self.query.isActive:
                self.query.stop()
            self._maybe_stats(time.monotonic(), final=True)
            self.producer.flush(5)
            if self._board is not None:
                self._board.close()
            spark.stop()
