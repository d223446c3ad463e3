"""``squall run``: one topology end to end on real input.

Steps: start the embedded broker (unless ``bootstrap.servers`` is set) -> create the
topology's topics -> start the workers -> produce the input lines into the source spout's
topic -> watch progress until every source record is committed (i.e. acked or
dead-lettered) -> stop the workers -> fold the output topic into a JSON file.
"""

from __future__ import annotations

import itertools
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from service.brokers.admin import ensure_topology_topics, read_records, read_topic
from service.brokers.embedded import EMBEDDED_LAYER, EmbeddedBroker
from service.config import ServiceSettings
from service.control.scheduling import is_spark_bolt, worker_plan
from service.exceptions import InputError
from service.query.errors import read_errors
from service.run.corpus import read_lines, shakespeare_texts
from service.run.local import LocalCluster
from service.run.show import shown_stream
from service.run.summary import Summary
from streams.config import TopologyConfig, resolve
from streams.exceptions import SquallError
from streams.kafka.changelog_store import SCHEME as CHANGELOG_SCHEME
from streams.kafka.changelog_store import ChangelogKvStore
from streams.kafka.clients import RELIABLE_PRODUCER, new_consumer, new_producer
from streams.kafka.spout import KafkaSpout
from streams.model.checks import check_confs
from streams.model.loader import load_topology
from streams.model.spec import Topology
from streams.monitoring.board import StatsBoard
from streams.monitoring.bolt_progress import REEXECUTION_CAUSES
from streams.monitoring.spout_ledger import REPLAY_CAUSES
from streams.state import State, open_backend
from streams.state.backend import KvStore
from streams.state.keyvalue import is_internal
from streams.state.semantics import STATE_KINDS
from streams.transactional.spout import TransactionalKafkaSpout
from streams.wire.naming import ACKER_COMPONENT, component_group, component_topic, show_topic

log = logging.getLogger("squall.run")


def settled(owned: list[list[int]], tasks: int, executors: int) -> bool:
    """True if ``owned`` (task lists, one per live executor instance) covers ``tasks`` tasks exactly once and at least ``executors`` executors own some."""
    flat = [t for lists in owned for t in lists]
    return len(flat) == tasks and len(set(flat)) == tasks and sum(1 for lists in owned if lists) >= executors


def source_spout(topology: Topology) -> str:
    """The KafkaSpout that reads its own topic (where ``--input`` is produced)."""
    for cdef in topology.spouts:
        if isinstance(cdef.obj, KafkaSpout) and cdef.obj.reads_own_topic:
            return cdef.id
        if isinstance(cdef.obj, TransactionalKafkaSpout) and not cdef.obj.topics:
            return cdef.id
    raise InputError(f"[{topology.name}] no KafkaSpout reads its own topic, so there is nowhere to produce --input")


class Job:
    """A running topology plus its input and output (the engine of ``squall run``).

    Use ``start()``, then ``wait()`` (returns a :class:`Summary`), then ``close()``;
    tests may reach ``supervisor`` in between to kill and restart workers.
    """

    def __init__(
        self,
        topology_file: str | Path,
        input_path: Path | None = None,
        output_path: Path | None = None,
        settings: ServiceSettings | None = None,
        *,
        name: str | None = None,
        conf_overrides: dict[str, Any] | None = None,
        max_records: int | None = None,
        topology_overrides: dict[str, Any] | None = None,
        show: list[str] | None = None,
    ) -> None:
        self.settings = settings or ServiceSettings()
        self.topology_file = Path(topology_file)
        base = load_topology(self.topology_file)
        self.name = name or f"{base.name}-{uuid.uuid4().hex[:8]}"
        self.topology = load_topology(self.topology_file, self.name)
        self.topology_overrides = dict(topology_overrides or {})
        self.show = [shown_stream(base, s) for s in show or []]
        """``component:stream`` of each stream whose tuples :meth:`shown` returns (``squall run --show``)."""
        if self.show:
            self.topology_overrides["squall.run.show"] = self.show
        self.topology.conf.update(self.topology_overrides)
        self.service_conf = {**self.settings.state_layer(self.name), **self.settings.topology_layer(), **(conf_overrides or {})}
        self.conf: TopologyConfig = resolve(self.service_conf, self.topology.conf, where=self.name)
        check_confs(self.topology, self.service_conf)  # e.g. a window longer than the message timeout
        self.input_path = input_path
        self.output_path = output_path
        self.max_records = max_records
        self.broker: EmbeddedBroker | None = None
        self.cluster: LocalCluster | None = None
        self.board: StatsBoard | None = None
        self.records = 0
        self.ends: dict[tuple[str, str], dict[int, int]] = {}
        self.started = 0.0
        self.finished: float | None = None
        self.bootstrap = ""
        self.spout_id = self.topology.spouts[0].id
        self._snapshots: dict[str, dict[str, Any]] = {}
        self._readers: dict[str, Consumer] = {}
        """One consumer per spout group, to read its committed offsets (done())."""
        self._next_broker_warning = 0.0

    # -- lifecycle -------------------------------------------------------------------
    def start(self, produce_input: bool = True) -> None:
        """Start broker (if needed), topics and workers; then produce the input unless told not to."""
        bootstrap = self.settings.resolved_bootstrap()
        workdir = self.settings.data_dir / "runs" / self.name
        workdir.mkdir(parents=True, exist_ok=True)
        if not bootstrap:
            self.broker = EmbeddedBroker(log_path=workdir / "broker.log")
            bootstrap = self.broker.start()
            self.service_conf.update(EMBEDDED_LAYER)
            check_confs(self.topology, self.service_conf)  # e.g. an exactly-once Kafka sink refuses the embedded broker
        self.bootstrap = bootstrap
        ensure_topology_topics(bootstrap, self.topology, self.conf)
        plan = worker_plan(
            self.topology_file,
            self.topology,
            self.conf,
            bootstrap,
            workdir,
            service_conf=self.service_conf,
            kafka=self.settings.kafka_overrides(),
            metrics_port=self.settings.metrics_port,
            log_level=self.settings.log_level,
            topology_overrides=self.topology_overrides,
            metrics_host=self.settings.http_host,
        )
        self.cluster = LocalCluster(self.topology, workdir, plan, self.settings.restart_policy(), hang_timeout_s=self.conf.worker_hang_timeout_secs)
        self.cluster.start()
        self.board = StatsBoard(bootstrap, self.name)
        self.started = time.monotonic()
        if produce_input:
            spark = any(is_spark_bolt(c.obj) for c in self.topology.components.values())
            self.wait_ready(240.0 if spark else 120.0)  # a SparkBolt's driver takes ~20 s to start, minutes on a busy machine
            self.produce_input()

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        """Block until every component's tasks (and the ackers) are assigned and settled.

        Settled means: each task is owned by exactly one executor and every executor owns
        at least one (when there are enough tasks). A stale snapshot of an executor that
        held every task just before the group grew would otherwise pass for "ready" in the
        middle of a rebalance, and input produced then is processed twice (the moved spout
        tasks re-read what they had not committed). Raises TimeoutError.
        """
        assert self.board is not None
        want: dict[str, tuple[int, int]] = {}
        for c in self.topology.components.values():
            executors = 1 if is_spark_bolt(c.obj) else c.parallelism
            want[c.id] = (c.num_tasks, min(executors, c.num_tasks))
        if self.conf.ackers:
            want[ACKER_COMPONENT] = (self.conf.ackers, 1 if self.conf.acker_runtime == "faust" else self.conf.ackers)
        deadline = time.monotonic() + timeout_s
        while True:
            assert self.cluster is not None
            self.cluster.check()
            self.board.poll(0.3)
            owned: dict[str, list[list[int]]] = {}
            for snap in self.board.latest.values():
                if not snap.get("final"):
                    owned.setdefault(snap["component"], []).append(list(snap.get("tasks", [])))
            if all(settled(owned.get(c, []), n, e) for c, (n, e) in want.items()):
                self.started = time.monotonic()
                return
            if time.monotonic() > deadline:
                have = {c: [len(t) for t in lists] for c, lists in owned.items()}
                raise TimeoutError(f"[{self.name}] tasks not all assigned: executors own {have}, want (tasks, executors) {want}")

    def produce_input(self) -> None:
        """Produce the ``--input`` lines (default: the Shakespeare corpus) into the source spout."""
        self.spout_id = source_spout(self.topology)
        path = self.input_path or shakespeare_texts(self.settings.data_dir)
        lines = read_lines(path)
        if self.max_records is not None:
            lines = itertools.islice(lines, self.max_records)
        self.records += self.produce(self.spout_id, lines)

    def produce(self, spout_id: str, records: Iterable[bytes], topic: str | None = None, partitions: int | None = None) -> int:
        """Produce raw ``records`` round-robin into ``topic`` (default: ``spout_id``'s own topic, over its tasks).

        The job is done only once ``spout_id`` has committed every one of them. Returns the
        count.
        """
        topic = topic or component_topic(self.name, spout_id)
        tasks = partitions or self.topology.components[spout_id].input_partitions
        producer = new_producer(
            {
                "bootstrap.servers": self.bootstrap,
                **RELIABLE_PRODUCER,
                "linger.ms": 50,
                "batch.num.messages": 10000,
                "queue.buffering.max.messages": 1_000_000,
                "log_level": 3,
            }
        )
        ends = self.ends.setdefault((spout_id, topic), {})
        errors: list[str] = []

        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(str(err))
            else:
                p = msg.partition()
                ends[p] = max(ends.get(p, 0), msg.offset() + 1)

        n = 0
        for line in records:
            while True:
                try:
                    producer.produce(topic, line, partition=n % tasks, on_delivery=delivered)
                    break
                except BufferError:
                    producer.poll(0.05)
            n += 1
            if n % 10000 == 0:
                producer.poll(0)
        waited = 0.0
        while producer.flush(5) > 0:  # a paused or restarting broker: wait (librdkafka fails records only after delivery.timeout.ms)
            waited += 5
            log.warning("[%s] input records not yet confirmed by the broker after %.0f s; waiting", spout_id, waited)
        if errors:
            raise InputError(f"[{spout_id}] {len(errors)} input records were not delivered to {topic}: {errors[0]}")
        log.info("[%s] produced %d records into %s", spout_id, n, topic)
        return n

    def committed(self, spout_id: str | None = None, topic: str | None = None, partitions: int | None = None) -> dict[int, int]:
        """Committed offsets of a spout's group for ``topic`` (default: its own topic), per partition."""
        spout_id = spout_id or self.spout_id
        topic = topic or component_topic(self.name, spout_id)
        n = partitions or self.topology.components[spout_id].input_partitions
        c = self._readers.get(spout_id)
        if c is None:
            c = self._readers[spout_id] = new_consumer({"bootstrap.servers": self.bootstrap, "group.id": component_group(self.name, spout_id), "log_level": 0})
        tps = c.committed([TopicPartition(topic, p) for p in range(n)], timeout=10)
        return {tp.partition: tp.offset for tp in tps}

    def done(self) -> bool:
        """True when every source record was produced and every spout committed past it.

        A broker that does not answer (paused, restarting, failing over) is not an error: it
        is said once every 10 s, and the job waits for it.
        """
        try:
            for (spout_id, topic), ends in self.ends.items():
                committed = self.committed(spout_id, topic, max(ends) + 1 if ends else 1)
                if not all(committed.get(p, -1) >= end for p, end in ends.items()):
                    return False
        except KafkaException as exc:
            now = time.monotonic()
            if now >= self._next_broker_warning:
                self._next_broker_warning = now + 10.0
                log.warning("[%s] the broker does not answer (%s); waiting for it", self.name, exc)
            return False
        return True

    def wait(self, timeout_s: float = 3600.0, on_progress: Callable[[Job], None] | None = None, poll_s: float = 0.5) -> Summary:
        """Block until every source record is committed; raises WorkerDied or TimeoutError."""
        assert self.cluster is not None and self.board is not None
        deadline = time.monotonic() + timeout_s
        next_check = 0.0
        while True:
            self.cluster.check()
            self.board.poll(poll_s)
            if on_progress is not None:
                on_progress(self)
            now = time.monotonic()
            if now >= next_check:
                next_check = now + poll_s
                if self.done():
                    break
            if now > deadline:
                raise TimeoutError(f"[{self.name}] not done after {timeout_s} s: committed {self.committed()} of {self.ends}")
        self.finished = time.monotonic()
        self.cluster.stop()
        end = time.monotonic() + 5
        while time.monotonic() < end and self.board.poll(0.3):
            pass
        if not self.board.read_to_now_or_reopen():
            log.warning("[%s] could not read the stats to their end: the summary may show older counters", self.name)
        return self.summary()

    def summary(self) -> Summary:
        """The run's :class:`Summary` (writes the output file too)."""
        assert self.board is not None
        b = self.board
        seconds = (self.finished if self.finished is not None else time.monotonic()) - self.started
        out, keys = self.write_output()
        return Summary(
            topology=self.name,
            records=self.records,
            trees_acked=int(b.total("spout", "acked")),
            trees_failed=int(b.total("spout", "failed")),
            replayed=int(b.total("spout", "replayed")),
            emitted=int(b.total("spout", "emitted")),
            replays={cause: int(b.total("spout", f"replayed_{cause}")) for cause in REPLAY_CAUSES},
            dead_lettered=int(sum(b.total(kind, "dead_lettered") for kind in ("spout", "bolt", "acker"))),
            seconds=seconds,
            records_per_s=self.records / seconds if seconds > 0 else 0.0,
            complete_latency_p50_s=b.quantile("spout", "complete_latency", 0.5),
            complete_latency_p99_s=b.quantile("spout", "complete_latency", 0.99),
            output=str(out) if out else None,
            keys=keys,
            output_unit="keys" if self.topology.outputs or self.topology.state_outputs else "records",
            worker_restarts=self.cluster.restarts if self.cluster is not None else 0,
            **self._batch_summary(),
            extra={"bolt_tuples_emitted": int(b.total("bolt", "emitted")), "acker_ops": int(b.total("acker", "ops"))},
            errors={cause: sum(types.values()) for cause, types in sorted(b.errors().items())},
            last_errors=self._last_errors(),
            reexecuted={cause: int(b.total("bolt", f"reexecuted_{cause}")) for cause in REEXECUTION_CAUSES},
        )

    def _last_errors(self, n: int = 5) -> list[str]:
        """The last ``n`` error reports as lines (none if the topic cannot be read)."""
        try:
            return [r.line() for r in read_errors(self.bootstrap, self.name)[-n:]]
        except (SquallError, KafkaException) as exc:
            log.warning("[%s] error reports not read: %s", self.name, exc)
            return []

    def _batch_summary(self) -> dict[str, Any]:
        if not self.topology.transactional or self.board is None:
            return {}
        spouts = [s for s in self.board.latest.values() if s["kind"] == "spout"]
        return {
            "batches_committed": int(sum(s["counters"].get("batches_committed", 0) for s in spouts)),
            "batches_replayed": int(sum(s["counters"].get("batches_replayed", 0) for s in spouts)),
            "last_txid": int(max((s["counters"].get("last_txid", 0) for s in spouts), default=0)),
        }

    def results(self) -> dict[str, Any]:
        """Fold every output topic into ``{key: value}`` (``sum`` or ``last`` per OutputDef), and add every state output's ``key -> value``."""
        merged: dict[str, Any] = {}
        for so in self.topology.state_outputs:
            if so.kind == "keyvalue":
                merged.update(self.keyvalue(so.state))
                continue
            merged.update({str(k): v for k, v in self.state(so.state, so.kind).items().items()})
        for out in self.topology.outputs:
            for obj in read_topic(self.bootstrap, out.topic_for(self.name)):
                out.fold(merged, obj)
        return merged

    def keyvalue(self, component: str) -> dict[str, Any]:
        """A stateful bolt's checkpointed key-value state, every task's merged (``key -> value``)."""
        url = self.conf.state_url
        if not url:
            raise InputError(f"[{self.name}] no state store configured (squall.state.url)")
        kafka = self.settings.kafka_overrides()
        backend: KvStore = ChangelogKvStore(self.bootstrap, kafka, component) if url.startswith(CHANGELOG_SCHEME) else open_backend(url)
        try:
            return {str(json.loads(k)): json.loads(v) for _, k, v in backend.kv_items(f"{self.name}.{component}") if not is_internal(k)}
        finally:
            backend.close()

    def state(self, name: str, kind: str = "opaque") -> State:
        """The topology's state ``name`` (what its committers wrote), in ``squall.state.url``."""
        url = self.conf.state_url
        if not url:
            raise InputError(f"[{self.name}] no state store configured (squall.state.url)")
        return STATE_KINDS[kind](open_backend(url), f"{self.name}.{name}")

    def sink_topics(self) -> list[str]:
        """The fixed topics the topology's Kafka sinks write to (KafkaBolt, KafkaSink)."""
        return [t for c in self.topology.components.values() if (t := c.obj.sink_topic(self.name)) is not None]

    def shown(self) -> dict[str, list[dict[str, Any]]]:
        """Per ``component:stream`` given to ``show``: its tuples as ``{field: value}``, in the order read."""
        out: dict[str, list[dict[str, Any]]] = {}
        for shown in self.show:
            component, _, stream = shown.partition(":")
            out[shown] = read_topic(self.bootstrap, show_topic(self.name, component, stream))
        return out

    def write_output(self) -> tuple[Path | None, int]:
        """Write the topology's output as JSON; returns the path and its key (or record) count.

        ``set_output`` and ``set_state_output``: one JSON object, ``{key: value}``. Else the
        records of its KafkaBolts' topics, as JSON lines ``{"topic", "key", "value"}`` (UTF-8
        text; undecodable bytes replaced). Nothing declared: (None, 0).
        """
        if not self.topology.outputs and not self.topology.state_outputs:
            return self._write_sinks()
        merged = self.results()
        first = self.topology.outputs[0].topic_for(self.name) if self.topology.outputs else f"{self.name}.{self.topology.state_outputs[0].state}"
        path = self.output_path or Path(f"{first}.json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(dict(sorted(merged.items())), ensure_ascii=False, indent=0))
        return path, len(merged)

    def _write_sinks(self) -> tuple[Path | None, int]:
        sinks = self.sink_topics()
        if not sinks:
            return None, 0
        path = self.output_path or Path(f"{sinks[0]}.jsonl")
        path.parent.mkdir(parents=True, exist_ok=True)
        n = 0
        with path.open("w", encoding="utf-8") as f:
            for topic in sinks:
                for key, value in read_records(self.bootstrap, topic):
                    text = {"topic": topic, "key": _text(key), "value": _text(value)}
                    f.write(json.dumps(text, ensure_ascii=False) + "\n")
                    n += 1
        return path, n

    def board_snapshots(self) -> list[dict[str, Any]]:
        """The latest stats snapshot of every executor instance seen (including dead ones)."""
        return list(self._snapshots.values()) if self.board is None else list(self.board.latest.values())

    def close(self) -> None:
        """Stop the workers, the stats reader and the embedded broker."""
        if self.board is not None:
            self._snapshots = dict(self.board.latest)
        if self.cluster is not None:
            self.cluster.stop()
        if self.board is not None:
            self.board.close()
            self.board = None
        for reader in self._readers.values():
            reader.close()
        self._readers = {}
        if self.broker is not None:
            self.broker.stop()


def _text(raw: bytes | None) -> str | None:
    return None if raw is None else raw.decode("utf-8", errors="replace")
