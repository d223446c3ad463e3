"""The faust-streaming acker runtime: a faust agent with a faust Table.

Same topics, same group, same changelog topic and record format as the native runtime
(:mod:`acker.runtime_native`), and the same pure :class:`acker.durable.DurableLedger`,
so the two are interchangeable (``squall.acker.runtime: faust``). Per batch of events
(``take_events``, at most ``squall.flush.interval.secs`` apart): apply ops -> send ack
results and flush -> write changelog records through the Table and flush -> faust
commits the input offsets -> done records below the committed offset are tombstoned.

It is much slower than native (a Python asyncio client); it exists for deployments that
already run faust. Workarounds live in :mod:`acker.faust_compat`. It runs in its own
worker process (the supervisor gives faust ackers a dedicated worker).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from confluent_kafka import Message

from acker import faust_compat
from acker.common import publish_ledger_stats, record_outcomes, record_resets, restored_ledger
from acker.durable import DurableLedger
from streams.exceptions import DecodeError, FatalError
from streams.runtime.executor import Executor, ExecutorEnv
from streams.runtime.fencing import EpochFence
from streams.wire.acker import chunks, decode_ops, encode_results, read_from, root_key
from streams.wire.codec import encode_json
from streams.wire.naming import ACKER_COMPONENT, ack_result_topic, acker_changelog_topic, acker_topic, component_group, metrics_topic

log = logging.getLogger("squall.acker.faust")


class FaustAckerExecutor(Executor):
    """Runs the acker as a faust app. :meth:`run_blocking` must run in the main thread."""

    kind = "acker"

    def __init__(self, env: ExecutorEnv) -> None:
        super().__init__(env)
        self.ledgers: dict[int, DurableLedger] = {}

    def _restore_poison(self, msg: Message, exc: DecodeError) -> None:
        """Dead-letter a changelog record the restore could not decode."""
        self.dead_letter(msg, str(exc), 0)

    def build_app(self) -> Any:
        """The faust app: an agent over ``__acker`` and a Table changelogged to ``__acker.changelog``."""
        import faust
        from aiokafka import codec

        if self.conf.compression_type in ("lz4", "snappy", "zstd") and not codec.has_lz4():
            raise FatalError(
                f"[{ACKER_COMPONENT}] the faust acker cannot read the {self.conf.compression_type} batches the executors write "
                "(squall.kafka.compression.type): aiokafka needs the cramjam package (pip install 'squall[faust]')"
            )
        faust_compat.patch_fetch_wait(self.conf.fetch_wait_max_ms)
        name = self.topology.name
        ackers = self.conf.ackers
        app = faust.App(
            component_group(name, ACKER_COMPONENT),
            broker=f"kafka://{self.bootstrap}",
            store="memory://",
            topic_partitions=ackers,
            topic_allow_declare=False,
            web_enabled=False,
            broker_session_timeout=self.conf.session_timeout_ms / 1000,
            broker_heartbeat_interval=max(0.5, self.conf.session_timeout_ms / 6000),
            broker_commit_interval=max(0.5, self.conf.flush_interval_secs),
            consumer_auto_offset_reset="earliest",
            producer_linger_ms=self.conf.linger_ms,
            table_standby_replicas=0,
            key_serializer="raw",
            value_serializer="raw",
        )
        inp = app.topic(acker_topic(name), key_serializer="raw", value_serializer="raw", partitions=ackers)
        results = app.topic(ack_result_topic(name), key_serializer="raw", value_serializer="raw")
        changelog = app.topic(acker_changelog_topic(name), key_serializer="raw", value_serializer="raw", partitions=ackers)
        faust_compat.register_ledger_store()
        table = app.Table("acker", partitions=ackers, changelog_topic=changelog, key_type=bytes, value_type=bytes, store=faust_compat.LEDGER_STORE)
        input_name = acker_topic(name)
        stats = self.stats
        fence = EpochFence()

        async def ledger_for(p: int) -> DurableLedger:
            dl = self.ledgers.get(p)
            if dl is None:
                loop = asyncio.get_running_loop()
                dl = await loop.run_in_executor(None, restored_ledger, self.bootstrap, name, self.conf, p, stats, self._restore_poison)
                self.ledgers[p] = dl
            return dl

        @app.agent(inp)
        async def acker(stream: Any) -> None:
            async for events in stream.take_events(4096, within=self.conf.flush_interval_secs):
                out: dict[int, list[list[Any]]] = {}
                for ev in events:
                    p, off = ev.message.partition, ev.message.offset
                    dl = await ledger_for(p)
                    origin = read_from(ev.message.headers)
                    if origin is not None and not fence.admit(p, origin[0], origin[1]):
                        stats.inc("fenced_acker_records")  # an older owner's late flush (streams.runtime.fencing)
                        continue
                    try:
                        ops = decode_ops(ev.value, component=ACKER_COMPONENT, topic=input_name, partition=p, offset=off)
                    except DecodeError as exc:
                        stats.inc("poison")
                        self.dead_letter_raw(ev.value, ev.key, str(exc), topic=input_name, partition=p, offset=off, attempts=0)
                        continue
                    stats.inc("ops", len(ops))
                    record_outcomes(dl.apply(off, ops), stats, out)
                    record_resets(dl.take_resets(), out)
                for dl in self.ledgers.values():
                    record_outcomes(dl.expire(), stats, out)
                if out:
                    for task, items in out.items():
                        for chunk in chunks(items):
                            await results.send(value=encode_results(chunk), partition=task)
                    await app.producer.flush()  # results confirmed before done records
                for p, dl in self.ledgers.items():
                    for root, value in dl.changelog():
                        faust_compat.table_put(table, p, root_key(root), value)
                await app.producer.flush()  # changelog durable before faust commits offsets
                collect_done()

        def collect_done() -> None:
            """Tombstone done records below faust's committed input offsets."""
            committed = faust_compat.committed_offsets(app, input_name)
            for p, dl in self.ledgers.items():
                if p in committed:
                    for root, value in dl.gc(committed[p]):
                        faust_compat.table_put(table, p, root_key(root), value)

        @app.on_partitions_assigned.connect  # type: ignore[arg-type]
        async def assigned(app_: Any, assigned: Any, **kwargs: Any) -> None:
            mine = sorted(tp.partition for tp in assigned if tp.topic == input_name)
            for p in mine:
                await ledger_for(p)  # restore before the first event of the partition
            self.assigned.set()
            log.warning("[%s] %s assigned acker tasks %s", ACKER_COMPONENT, self.worker, mine)

        @app.on_partitions_revoked.connect  # type: ignore[arg-type]
        async def revoked(app_: Any, revoked: Any, **kwargs: Any) -> None:
            for tp in revoked:
                if tp.topic == input_name:
                    self.ledgers.pop(tp.partition, None)

        @app.timer(interval=self.conf.stats_interval_secs)  # type: ignore[untyped-decorator]
        async def publish_stats() -> None:
            collect_done()  # also without new input, e.g. right after a restore
            publish_ledger_stats(self.ledgers, self.stats)
            self.produce(metrics_topic(name), encode_json(self.stats.snapshot()), key=self.stats.instance.encode())
            self.producer.poll(0)

        return app

    def run_blocking(self) -> None:
        """Run the faust worker until SIGTERM (it installs its own signal handlers)."""
        from faust.worker import Worker

        app = self.build_app()
        try:
            Worker(app, loglevel="WARNING", quiet=True).execute_from_commandline()
        finally:
            self.produce(metrics_topic(self.topology.name), encode_json(self.stats.snapshot(final=True)), key=self.stats.instance.encode())
            self.producer.flush(5)

    def _run(self) -> None:  # pragma: no cover - faust must own the main thread
        raise RuntimeError("the faust acker runs in the main thread via run_blocking()")
