"""Apache Kafka in KRaft mode on 127.0.0.1 (or on hosts of their own): one node, or a cluster of combined broker-controllers.

The tests, ``bench/`` and ``squall broker --kafka`` start real Kafka through this one launcher,
with no Docker and no download at run time after the first:

1. **Jars, once.** :func:`kafka_jars` resolves ``org.apache.kafka:kafka_2.13`` (and
   ``kafka-tools``, for its perf tools) with Maven into ``<cache>/kafka-<version>/libs``, under
   a file lock. Without Maven Central it raises :class:`~service.exceptions.BrokerError` in one
   line.
2. **Format.** Every node's log dir is formatted with one cluster id (``StorageTool format``).
3. **Start.** Each node is ``java kafka.Kafka server.properties`` with ``process.roles=broker,controller``
   and its own ports; the launcher returns once every broker is in the metadata and every
   node accepts connections.
4. **Stop.** SIGTERM (a controlled shutdown), then SIGKILL; the data dirs it made are removed.

Nodes on hosts of their own (``hosts``, e.g. network namespaces with a command ``prefix``
each, ``ip netns exec NS``) listen on the same two ports on their own address; the caller
waits for them from where it can reach them (``start(wait=False)``).

A cluster of ``n >= 3`` nodes gives every topic replication factor 3 and ``min.insync.replicas``
2 by default (``default.replication.factor``, which Squall's topic creation uses). Nodes can be
killed (``kill -9``) and started again on the same log dir, for failover tests.

Example (needs Java 17 and Maven; not run as a doctest)::

    with ApacheKafka(nodes=3) as kafka:
        print(kafka.bootstrap)  # 127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3
        kafka.kill(kafka.leader_of("squall.wc.__acker", 0))
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import logging
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from service.brokers.addresses import listen_and_advertise
from service.exceptions import BrokerError
from service.process.spawn import die_with_parent

log = logging.getLogger("squall.kafka")

KAFKA_VERSION = "4.4.0"
"""The Apache Kafka version Squall is tested on (``org.apache.kafka:kafka_2.13``)."""

SCALA_VERSION = "2.13"
LOG4J_VERSION = "2.25.5"
"""log4j's version in Kafka's dependency closure: its SLF4J binding sends the broker's log to its file."""

MAVEN_HINT = "Apache Kafka's jars come from Maven Central (org.apache.kafka:kafka_2.13) and need `mvn` and Java 17"

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.squall</groupId>
  <artifactId>apache-kafka-broker</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_{scala}</artifactId><version>{version}</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>{version}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>{log4j}</version></dependency>
  </dependencies>
</project>
"""

_LOG4J2 = """status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.out.ref = out
logger.server.name = kafka.server.KafkaRaftServer
logger.server.level = INFO
logger.broker.name = kafka.server.BrokerServer
logger.broker.level = INFO
logger.authorizer.name = kafka.authorizer.logger
logger.authorizer.level = INFO
"""
"""The brokers' log4j settings (written into each workdir): warnings, start and stop, and every
operation an ACL denied (StandardAuthorizer logs denials at INFO, what it allows at DEBUG)."""


def default_cache() -> Path:
    """Where the jars are kept: ``$SQUALL_DATA_DIR`` or ``~/.cache/squall``."""
    return Path(os.environ.get("SQUALL_DATA_DIR", Path.home() / ".cache" / "squall"))


def kafka_jars(cache: Path | None = None, version: str = KAFKA_VERSION) -> Path:
    """The folder of Kafka's jars (its class path), fetched once with Maven.

    Safe to call from several processes at once (a file lock). Raises BrokerError in one line
    when Java or Maven is missing or Maven Central cannot be reached.
    """
    home = (cache or default_cache()) / f"kafka-{version}"
    libs = home / "libs"
    done = home / "complete"
    if done.exists():
        return libs
    home.mkdir(parents=True, exist_ok=True)
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            raise BrokerError(f"[kafka] `{tool}` is not on PATH: {MAVEN_HINT}")
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return libs
        (home / "pom.xml").write_text(_POM.format(scala=SCALA_VERSION, version=version, log4j=LOG4J_VERSION))
        got = subprocess.run(
            ["mvn", "-q", "-B", "-f", str(home / "pom.xml"), "dependency:copy-dependencies", f"-DoutputDirectory={libs}"],
            capture_output=True,
            text=True,
            timeout=900,
        )
        if got.returncode != 0:
            last = next((line for line in reversed((got.stdout + got.stderr).splitlines()) if line.strip()), "no output")
            raise BrokerError(f"[kafka] cannot fetch Apache Kafka {version} from Maven Central ({MAVEN_HINT}): {last.strip()[:300]}")
        done.write_text(version)
    return libs


PORT_ATTEMPTS = 3
"""How many times :meth:`ApacheKafka.start` picks ports, when a node finds its address in use."""


def free_ports(n: int) -> list[int]:
    """``n`` free TCP ports on 127.0.0.1, below the kernel's ephemeral range.

    Below it, no client's outgoing connection can take one of them before a server binds it.
    Raises BrokerError if none can be found.
    """
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    rng = random.SystemRandom()  # os.urandom on every call: nothing in the process can have seeded it alike in two workers
    for _ in range(200):
        base = rng.randrange(10_000, max(10_001, low - n))
        socks: list[socket.socket] = []
        try:
            for port in range(base, base + n):
                sock = socket.socket()
                socks.append(sock)
                sock.bind(("127.0.0.1", port))
            return list(range(base, base + n))
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
    raise BrokerError(f"[kafka] no {n} consecutive free ports below {low}")


@dataclass
class KafkaNode:
    """One combined broker and controller: its id, ports, log dir and process."""

    node_id: int
    port: int
    controller_port: int
    data_dir: Path
    config_path: Path
    log_path: Path
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    host: str = "127.0.0.1"
    prefix: list[str] = field(default_factory=list)
    """What its command runs under (e.g. ``ip netns exec NS``; empty: nothing)."""
    listen: str | None = None
    """The address its broker listener binds (None: ``host``)."""
    advertise: str | None = None
    """The host its metadata tells clients (None: ``host``)."""
    extra_ports: dict[str, int] = field(default_factory=dict)
    """The port of each extra listener (``ApacheKafka(listeners=...)``), by listener name."""

    @property
    def address(self) -> str:
        """``HOST:PORT`` of its broker listener, as clients reach it."""
        return f"{self.advertise or self.host}:{self.port}"

    def listener(self, name: str) -> str:
        """``HOST:PORT`` of extra listener ``name``, as clients reach it. Raises KeyError for an unknown one."""
        return f"{self.advertise or self.host}:{self.extra_ports[name]}"

    @property
    def running(self) -> bool:
        """Whether its process is alive."""
        return self.proc is not None and self.proc.poll() is None


class ApacheKafka:
    """Apache Kafka on 127.0.0.1 in KRaft mode (see the module docstring).

    Args:
      nodes: how many combined broker-controllers (1, or 3 and more for a replicated cluster).
      workdir: where the nodes' configs, data and logs go (default: a new temporary folder,
        removed by :meth:`stop`).
      cache: where the jars are kept (default :func:`default_cache`).
      config: extra broker settings for every node (they win over the defaults).
      heap: the JVM heap of each node (``-Xmx``).
      version: the Kafka version.
      ports_from: node ``i`` (from 1) listens on ``ports_from + k(i-1)`` and its controller on the
        next port, then its extra ``listeners`` (``k`` = 2 + their number; default: free ports
        below the ephemeral range).
      hosts: node ``i``'s address is ``hosts[i-1]`` (default: all on 127.0.0.1); then every
        node listens on ``ports_from`` (default 9092) and its controller on the next port.
      prefixes: node ``i``'s processes run under ``prefixes[i-1]`` (e.g. ``ip netns exec NS``).
      listen, advertise: the address every node's broker listener binds, and the host its
        metadata tells clients (``squall broker --kafka --listen/--advertise``;
        :func:`service.brokers.embedded.listen_and_advertise`); the controllers stay on their
        hosts. Default: the node's host for both.
      listeners: extra broker listeners, name -> security protocol (e.g. ``{"SASL_SSL": "SASL_SSL",
        "MTLS": "SSL"}``), each on a port of its own (:meth:`KafkaNode.listener`); their settings
        (``listener.name.<name>.*``, TLS stores) go in ``config``. The ``PLAINTEXT`` listener stays:
        brokers talk to each other on it, and readiness is asked there.
      format_args: extra arguments of ``kafka-storage format`` (e.g. ``--add-scram``: SCRAM users
        made before the first start, KIP-900).

    Raises:
      BrokerError: naming the node and its log when it does not start within ``timeout_s``.
    Not thread-safe.
    """

    def __init__(
        self,
        nodes: int = 1,
        workdir: Path | None = None,
        cache: Path | None = None,
        config: dict[str, str] | None = None,
        heap: str = "512m",
        version: str = KAFKA_VERSION,
        ports_from: int | None = None,
        hosts: list[str] | None = None,
        prefixes: list[list[str]] | None = None,
        listen: str | None = None,
        advertise: str | None = None,
        listeners: dict[str, str] | None = None,
        format_args: list[str] | None = None,
    ) -> None:
        if nodes < 1:
            raise BrokerError(f"[kafka] a cluster needs at least one node, got {nodes}")
        if (hosts is not None and len(hosts) != nodes) or (prefixes is not None and len(prefixes) != nodes):
            raise BrokerError(f"[kafka] {nodes} nodes need {nodes} hosts and prefixes, got {hosts} and {prefixes}")
        self.size = nodes
        self.cache = cache
        self.config = dict(config or {})
        self.heap = heap
        self.version = version
        self.ports_from = ports_from
        self.hosts = hosts
        self.prefixes = prefixes
        self.listen: str | None = None
        self.advertise: str | None = advertise
        self.listeners = dict(listeners or {})
        self.format_args = list(format_args or [])
        if listen is not None:
            self.listen, self.advertise = listen_and_advertise(listen, advertise)
        self._own_workdir = workdir is None
        self.workdir = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="squall-kafka-"))
        self.cluster_id = ""
        self.libs: Path | None = None
        self.nodes: dict[int, KafkaNode] = {}

    # -- settings ----------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        """``bootstrap.servers`` of every node."""
        return ",".join(n.address for n in self.nodes.values())

    @property
    def replication(self) -> int:
        """The default replication factor of new topics: 3 on a cluster of three or more, else 1."""
        return 3 if self.size >= 3 else 1

    def _properties(self, node: KafkaNode) -> str:
        voters = ",".join(f"{n.node_id}@{n.host}:{n.controller_port}" for n in self.nodes.values())
        rf = self.replication
        min_isr = 2 if rf >= 3 else 1
        props = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "controller.quorum.voters": voters,
            "listeners": ",".join(
                [f"PLAINTEXT://{node.listen or node.host}:{node.port}", f"CONTROLLER://{node.host}:{node.controller_port}"]
                + [f"{name}://{node.listen or node.host}:{port}" for name, port in node.extra_ports.items()]
            ),
            "advertised.listeners": ",".join([f"PLAINTEXT://{node.address}"] + [f"{name}://{node.listener(name)}" for name in node.extra_ports]),
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": ",".join(
                ["PLAINTEXT:PLAINTEXT", "CONTROLLER:PLAINTEXT"] + [f"{name}:{protocol}" for name, protocol in self.listeners.items()]
            ),
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(node.data_dir),
            "default.replication.factor": str(rf),
            "min.insync.replicas": str(min_isr),
            "offsets.topic.replication.factor": str(rf),
            "transaction.state.log.replication.factor": str(rf),
            "transaction.state.log.min.isr": str(min_isr),
            "group.initial.rebalance.delay.ms": "0",
            "num.partitions": "1",
            "log.cleaner.backoff.ms": "1000",
            "log.retention.check.interval.ms": "30000",  # purged segments leave the disk within 30 s of rolling (admin.ROLLED)
            **self.config,
        }
        return "".join(f"{k}={v}\n" for k, v in props.items())

    # -- lifecycle ---------------------------------------------------------------------
    def start(self, timeout_s: float = 90.0, wait: bool = True) -> str:
        """Fetch the jars (once), format and start every node; returns the bootstrap servers.

        ``wait``: return once every node is ready (:meth:`wait_ready`); False: at once (nodes on
        hosts this process cannot reach). Raises BrokerError (one line) when Maven Central,
        Java or a node fails.

        Ports it picked itself (:func:`free_ports`) were free when picked, but another process
        may bind one before the JVM does (two pytest-xdist workers once picked the same ones):
        a node that exits because its address is in use is started again on fresh ports, up to
        :data:`PORT_ATTEMPTS` times in all.
        """
        self.libs = kafka_jars(self.cache, self.version)
        for attempt in range(1, PORT_ATTEMPTS + 1):
            try:
                return self._start_once(timeout_s, wait)
            except BrokerError as exc:
                if attempt == PORT_ATTEMPTS or self.ports_from is not None or self.hosts is not None or "Address already in use" not in str(exc):
                    raise
                log.warning("[kafka] a port was taken before the broker bound it (attempt %d of %d): starting on fresh ports", attempt, PORT_ATTEMPTS)
                self._stop_nodes(15.0)
                for node in self.nodes.values():  # formatted with this attempt's cluster id; the logs stay
                    shutil.rmtree(node.data_dir, ignore_errors=True)
                self.nodes.clear()
        raise AssertionError("unreachable")

    def _start_once(self, timeout_s: float, wait: bool) -> str:
        """:meth:`start`'s one attempt: pick ports, format, launch, wait."""
        per = 2 + len(self.listeners)
        if self.hosts is not None:
            base = self.ports_from or 9092
            ports = list(range(base, base + per)) * self.size
        else:
            ports = free_ports(per * self.size) if self.ports_from is None else _claim(range(self.ports_from, self.ports_from + per * self.size))
        self.workdir.mkdir(parents=True, exist_ok=True)
        for i in range(self.size):
            node_id = i + 1
            home = self.workdir / f"node-{node_id}"
            home.mkdir(parents=True, exist_ok=True)
            self.nodes[node_id] = KafkaNode(
                node_id,
                ports[per * i],
                ports[per * i + 1],
                home / "data",
                home / "server.properties",
                home / "broker.log",
                host=self.hosts[i] if self.hosts is not None else "127.0.0.1",
                prefix=list(self.prefixes[i]) if self.prefixes is not None else [],
                listen=self.listen,
                advertise=self.advertise,
                extra_ports={name: ports[per * i + 2 + j] for j, name in enumerate(self.listeners)},
            )
        self.cluster_id = new_cluster_id()
        formats = []
        for node in self.nodes.values():
            node.config_path.write_text(self._properties(node))
            formats.append(
                (
                    node,
                    self._java(
                        "kafka.tools.StorageTool",
                        "format",
                        f"--cluster-id={self.cluster_id}",
                        "-c",
                        str(node.config_path),
                        "--ignore-formatted",
                        *self.format_args,
                    ),
                )
            )
        for node, proc in formats:  # in parallel: each is a JVM start
            out, _ = proc.communicate(timeout=120)
            if proc.returncode != 0:
                raise BrokerError(f"[kafka] formatting node {node.node_id}'s log dir failed: {out.decode(errors='replace').strip()[-300:]}")
        for node in self.nodes.values():
            self._launch(node)
        if wait:
            self.wait_ready(timeout_s)
        log.info("[kafka] Apache Kafka %s %s at %s (%d nodes)", self.version, "ready" if wait else "starting", self.bootstrap, self.size)
        return self.bootstrap

    def _classpath(self) -> str:
        assert self.libs is not None
        return f"{self.libs}/*"

    def _java(self, main: str, *args: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen(["java", "-cp", self._classpath(), main, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def _launch(self, node: KafkaNode) -> None:
        assert self.libs is not None
        log4j = self.workdir / "log4j2.properties"
        log4j.write_text(_LOG4J2)
        cmd = [
            *node.prefix,
            "java",
            f"-Xmx{self.heap}",
            f"-Xms{self.heap}",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={log4j}",
            "-cp",
            self._classpath(),
            "kafka.Kafka",
            str(node.config_path),
        ]
        with open(node.log_path, "ab") as out:
            node.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)

    def wait_ready(self, timeout_s: float = 90.0) -> None:
        """Wait until every running node answers metadata itself and lists every running node.

        Asking each node (not any node) matters after :meth:`restart`: the others may still
        list a killed node until the controller fences it. Raises BrokerError naming a node
        that exited (with its log's tail) or the timeout.
        """
        deadline = time.monotonic() + timeout_s
        running = [n for n in self.nodes.values() if n.running]
        want = {n.node_id for n in running}
        admins = {n.node_id: AdminClient({"bootstrap.servers": n.address, "log_level": 0}) for n in running}
        ready: set[int] = set()
        while True:
            for node in running:
                if node.proc is not None and node.proc.poll() is not None:
                    why = _bind_failure(node.log_path)
                    raise BrokerError(f"[kafka] node {node.node_id} exited with {node.proc.returncode}; its log ({node.log_path}): {why}")
                if node.node_id in ready:
                    continue
                try:
                    md = admins[node.node_id].list_topics(timeout=1)
                    if want <= set(md.brokers) and md.cluster_id == self.cluster_id:  # this cluster's node, not another one on the same port
                        ready.add(node.node_id)
                except KafkaException:
                    pass
            if ready == want:
                return
            if time.monotonic() > deadline:
                raise BrokerError(f"[kafka] nodes {sorted(want - ready)} not ready after {timeout_s:g} s (logs in {self.workdir})")
            time.sleep(0.1)

    def kill(self, node_id: int) -> None:
        """``kill -9`` node ``node_id`` (a crash: no controlled shutdown). Raises KeyError for an unknown node."""
        node = self.nodes[node_id]
        if node.running:
            assert node.proc is not None
            node.proc.kill()
            node.proc.wait(30)
        log.warning("[kafka] node %d killed", node_id)

    def pause(self, node_id: int) -> None:
        """SIGSTOP node ``node_id`` (a frozen broker: connections stay open, nothing answers)."""
        proc = self.nodes[node_id].proc
        if proc is not None:
            proc.send_signal(signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        """SIGCONT node ``node_id`` after :meth:`pause`."""
        proc = self.nodes[node_id].proc
        if proc is not None:
            proc.send_signal(signal.SIGCONT)

    def restart(self, node_id: int, timeout_s: float = 90.0) -> None:
        """Start node ``node_id`` again on its log dir (after :meth:`kill`) and wait until it is back."""
        node = self.nodes[node_id]
        if not node.running:
            self._launch(node)
        self.wait_ready(timeout_s)

    def leader_of(self, topic: str, partition: int) -> int:
        """The node that leads ``topic[partition]`` now. Raises BrokerError if it has no leader."""
        admin = AdminClient({"bootstrap.servers": ",".join(n.address for n in self.nodes.values() if n.running), "log_level": 0})
        md = admin.list_topics(topic, timeout=10).topics.get(topic)
        if md is None or partition not in md.partitions or md.partitions[partition].leader < 0:
            raise BrokerError(f"[kafka] {topic}[{partition}] has no leader")
        return int(md.partitions[partition].leader)

    def stop(self, timeout_s: float = 15.0) -> None:
        """Stop every node (SIGTERM, then SIGKILL after ``timeout_s``); remove the workdir if it made it."""
        self._stop_nodes(timeout_s)
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _stop_nodes(self, timeout_s: float) -> None:
        for node in self.nodes.values():
            if node.proc is not None and node.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    node.proc.send_signal(signal.SIGCONT)
                    node.proc.terminate()
        deadline = time.monotonic() + timeout_s
        for node in self.nodes.values():
            if node.proc is None:
                continue
            try:
                node.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                node.proc.kill()
                node.proc.wait()

    def __enter__(self) -> ApacheKafka:
        self.start()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def _claim(ports: range) -> list[int]:
    """``ports`` if every one is free on 127.0.0.1; raises BrokerError naming the first taken."""
    for port in ports:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError as exc:
                raise BrokerError(f"[kafka] port {port} on 127.0.0.1 is taken: {exc.strerror}") from None
    return list(ports)


def _bind_failure(path: Path) -> str:
    """A dead node's log: its bind failure's line if it has one (the retry in :meth:`ApacheKafka.start` looks for it), else the tail."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    line = next((ln for ln in text.splitlines() if "Address already in use" in ln), None)
    return line.strip()[:300] if line is not None else text[-600:].strip()


def new_cluster_id() -> str:
    """A random cluster id in Kafka's form: a URL-safe base64 UUID of 22 characters (``StorageTool random-uuid``).

    >>> len(new_cluster_id())
    22
    """
    while True:  # as Kafka's Uuid.randomUuid: never one that starts with "-" (a command line would read it as an option)
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid
