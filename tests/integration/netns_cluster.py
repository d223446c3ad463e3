"""A cluster of Squall hosts on a :class:`tests.integration.netns.Lan`, and the checks of issue 29's multi-host scenarios.

Broker hosts run the embedded broker (one host) or an Apache Kafka cluster (one node per
host); a database host runs PostgreSQL (the exactly-once state); h1-h3 each run ``squall
serve``; the client host submits, feeds and checks (:mod:`tests.integration.netns_client`).
Used by ``test_multihost.py`` (tansu) and ``test_multihost_kafka.py`` (Apache Kafka).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from service.brokers.apache_kafka import ApacheKafka
from service.brokers.postgres import postgres_bindir
from service.run.corpus import read_lines
from tests.integration.conftest import CACHE, WORD, corpus_slice, direct_count
from tests.integration.kafka_logs import written_twice
from tests.integration.netns import Lan, require
from tests.integration.service_harness import EXACTLY_ONCE, FEEDER, ROOT, WORDCOUNT

ZOMBIE = Path(__file__).parent / "zombie.py"
"""A replaced life's late record, made on purpose (:func:`start_zombie`)."""

SUPERVISORS = ["h1", "h2", "h3"]
PORT = 9092
PG_PORT = 5432
HTTP = 8080
RATE = 500
"""Lines a second fed to each topology."""
MESSAGE_TIMEOUT_S = 30
COMMIT_PERIOD_S = 0.25
"""The at-least-once word count's spout and bolt commit periods here (default 1 s): a replaced or
restarted task runs again what it had done since its last commit, so this bounds the overcount
whatever the cut-off host ran (with 1 s, a victim running every count task and a spout task
overcounted up to 6%)."""


class NetCluster:
    """Supervisors on h1-h3; the broker(s) on ``brokers``; PostgreSQL on ``db``; the CLI and the checks on c."""

    def __init__(self, lan: Lan, tmp: Path, brokers: list[str], db: str) -> None:
        self.lan = lan
        self.tmp = tmp
        self.brokers = brokers
        self.db = db
        self.bootstrap = ",".join(f"{lan.ip[b]}:{PORT}" for b in brokers)
        self.pg_url = f"postgresql://squall@{lan.ip[db]}:{PG_PORT}/postgres"
        self.namespace = f"t{uuid.uuid4().hex[:8]}"
        self.serves: dict[str, subprocess.Popen[bytes]] = {}
        self.pg_home: Path | None = None
        self.kafka: ApacheKafka | None = None

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            SQUALL_BOOTSTRAP_SERVERS=self.bootstrap,
            SQUALL_CONTROL_NAMESPACE=self.namespace,
            SQUALL_SHUTDOWN_TIMEOUT_SECS="20",
            SQUALL_LOG_LEVEL="INFO",
            PYTHONPATH=str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""),
        )
        env.update(extra)
        return env

    def start_broker(self) -> None:
        """The embedded broker on the first broker host, as an operator starts it for other hosts: ``squall broker --listen 0.0.0.0 --advertise IP``."""
        ip = self.lan.ip[self.brokers[0]]
        args = [sys.executable, "-m", "service.cli", "broker", "--port", str(PORT), "--listen", "0.0.0.0", "--advertise", ip]
        self.lan.popen(self.brokers[0], args, self.tmp / "broker.log", env=self.env())
        deadline = time.monotonic() + 30
        while self.client("tcp", self.lan.ip[self.brokers[0]], str(PORT)) != 0:
            assert time.monotonic() < deadline, "the broker did not start"
            time.sleep(0.2)

    def start_kafka(self) -> None:
        """An Apache Kafka cluster, one combined broker-controller per broker host (replication 3, min ISR 2), ready as the client host sees it."""
        kafka = self.kafka = ApacheKafka(
            nodes=len(self.brokers),
            workdir=self.tmp / "kafka",
            cache=CACHE,
            hosts=[self.lan.ip[b] for b in self.brokers],
            prefixes=[self.lan.exec_args(b) for b in self.brokers],
            ports_from=PORT,
        )
        kafka.start(wait=False)
        deadline = time.monotonic() + 120
        while self.client("brokers", self.bootstrap) != len(self.brokers):
            assert time.monotonic() < deadline, f"the Kafka cluster did not start: logs in {kafka.workdir}"
            time.sleep(1)

    def broker_host(self, node_id: int) -> str:
        """The broker host of Kafka node ``node_id``."""
        return self.brokers[node_id - 1]

    def start_postgres(self) -> None:
        bindir = postgres_bindir()
        assert bindir is not None, "no PostgreSQL server binaries: apt-get install postgresql"
        home = self.pg_home = Path(tempfile.mkdtemp(prefix="squall-pg-"))
        shutil.chown(home, "postgres")
        home.chmod(0o700)
        as_user = ["runuser", "-u", "postgres", "--"]
        subprocess.run([*as_user, str(bindir / "initdb"), "-D", str(home / "data"), "-A", "trust", "-U", "squall"], check=True, capture_output=True)
        with open(home / "data" / "pg_hba.conf", "a") as hba:
            hba.write(f"host all all 10.231.{self.lan.subnet}.0/24 trust\n")  # the LAN's hosts
        opts = f"-p {PG_PORT} -k {home} -c listen_addresses={self.lan.ip[self.db]} -c fsync=off"
        got = self.lan.run(self.db, [*as_user, str(bindir / "pg_ctl"), "-D", str(home / "data"), "-o", opts, "-l", str(home / "log"), "-w", "start"])
        assert got.returncode == 0, got.stderr

    def serve(self, sid: str) -> None:
        env = self.env(SQUALL_DATA_DIR=str(self.tmp / sid), SQUALL_HTTP_HOST=self.lan.ip[sid], SQUALL_HTTP_PORT=str(HTTP), SQUALL_SUPERVISOR_ID=sid)
        self.serves[sid] = self.lan.popen(sid, [sys.executable, "-m", "service.cli", "serve"], self.tmp / f"serve-{sid}.log", env=env)

    def client(self, *args: str) -> Any:
        got = self.lan.run("c", [sys.executable, "-m", "tests.integration.netns_client", *args], env=self.env())
        assert got.returncode == 0, f"netns_client {args} exited {got.returncode}: {got.stderr[-2000:]}"
        return json.loads(got.stdout)

    def squall(self, *args: str) -> str:
        got = self.lan.run("c", [sys.executable, "-m", "service.cli", *args], env=self.env())
        assert got.returncode == 0, f"squall {args} exited {got.returncode}: {got.stdout}\n{got.stderr}"
        return got.stdout

    def metric(self, sid: str, name: str) -> float:
        code, text = self.client("http", f"http://{self.lan.ip[sid]}:{HTTP}/metrics")
        for line in text.splitlines() if code == 200 else []:
            if line.startswith(name + "{") or line.startswith(name + " "):
                return float(line.rsplit(" ", 1)[1])
        return -1.0

    def workers(self, sids: list[str]) -> dict[str, float]:
        return {s: self.metric(s, "squall_supervisor_workers") for s in sids}

    def committed(self, name: str) -> int:
        return int(sum(self.client("committed", self.bootstrap, f"squall.{name}.lines", f"squall.{name}.lines", "2")))

    def feed(self, name: str, src: Path, seconds: float) -> subprocess.Popen[bytes]:
        return self.lan.popen(
            "c", [sys.executable, str(FEEDER), self.bootstrap, f"squall.{name}.lines", str(src), str(seconds), "2"], self.tmp / f"feed-{name}.log"
        )

    def close(self) -> None:
        for proc in self.serves.values():
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + 15  # a host still cut off cannot drain: it is killed with the LAN
        for proc in self.serves.values():
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
        if self.kafka is not None:
            self.kafka.stop(timeout_s=10)
        self.lan.close()
        if self.pg_home is not None:
            shutil.rmtree(self.pg_home, ignore_errors=True)


@contextlib.contextmanager
def running_lan(hosts: list[str], brokers: list[str], db: str, tmp: Path, kafka: bool) -> Iterator[NetCluster]:
    """Build the LAN, start the broker(s), PostgreSQL and a supervisor on each of h1-h3; everything is stopped and removed on the way out."""
    why = require()
    assert why is None, f"the multi-host tests cannot run here: {why}"
    cluster = NetCluster(Lan(hosts).build(), tmp, brokers, db)
    try:
        if kafka:
            cluster.start_kafka()
        else:
            cluster.start_broker()
        cluster.start_postgres()
        for sid in SUPERVISORS:
            cluster.serve(sid)
        yield cluster
    finally:
        cluster.close()


class Watch:
    """``ask()`` called again and again in a thread, at most once every ``period_s``, while the ``with`` block runs.

    ``seen`` is ``[(asked, answered, value)]`` (wall clock)."""

    def __init__(self, ask: Callable[[], Any], name: str, period_s: float = 1.0) -> None:
        self.ask = ask
        self.period_s = period_s
        self.seen: list[tuple[float, float, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        while not self._stop.is_set():
            asked = time.time()
            value = self.ask()
            self.seen.append((asked, time.time(), value))
            self._stop.wait(max(0.0, self.period_s - (time.time() - asked)))


def http_watch(cluster: NetCluster, readyz_of: str) -> Watch:
    """From the client host, in one process a round: ``readyz_of``'s ``/readyz`` and every supervisor's ``squall_supervisor_slots``.

    Values ``{"readyz": [status, body], "slots": {sid: slots}}`` (slots 0 where /metrics did not answer)."""
    urls = [f"http://{cluster.lan.ip[readyz_of]}:{HTTP}/readyz", *(f"http://{cluster.lan.ip[sid]}:{HTTP}/metrics" for sid in SUPERVISORS)]

    def ask() -> Any:
        readyz, *metrics = cluster.client("http", *urls)
        pages = {sid: text if code == 200 else "" for sid, (code, text) in zip(SUPERVISORS, metrics, strict=True)}
        return {"readyz": readyz, "slots": {sid: metric_value(page, "squall_supervisor_slots") for sid, page in pages.items()}}

    return Watch(ask, f"http-{readyz_of}")


def metric_value(text: str, name: str) -> float:
    """The value of the first sample of ``name`` in a /metrics page (0 if none)."""
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def status_watch(cluster: NetCluster, name: str) -> Watch:
    """``squall status NAME --json`` from the client host: values the status dicts (None: the verb failed)."""

    def ask() -> Any:
        got = cluster.lan.run("c", [sys.executable, "-m", "service.cli", "status", name, "--json"], env=cluster.env(), timeout_s=60)
        return json.loads(got.stdout) if got.returncode == 0 else None

    return Watch(ask, f"status-{name}", period_s=3.0)  # a verb's process each time: not more often (the hosts share two cores)


@dataclass
class Run:
    """The two word counts of one scenario."""

    alo: str
    eo: str
    src: Path
    lines: int


def submit_both(cluster: NetCluster, corpus: Path, tmp: Path, lines: int) -> Run:
    src = corpus_slice(corpus, tmp / "in.txt", lines)
    tag = uuid.uuid4().hex[:6]
    run = Run(f"alo{tag}", f"eo{tag}", src, lines)
    periods = ["-c", f"squall.spout.commit.period.secs={COMMIT_PERIOD_S}", "-c", f"squall.bolt.commit.period.secs={COMMIT_PERIOD_S}"]
    assert cluster.squall("submit", str(WORDCOUNT), "--name", run.alo, *periods).startswith(f"submitted {run.alo}: 4 workers")
    assert cluster.squall("submit", str(EXACTLY_ONCE), "--name", run.eo, "-c", f"squall.state.url={cluster.pg_url}").startswith(
        f"submitted {run.eo}: 3 workers"
    )
    deadline = time.monotonic() + 120
    while sum(max(0.0, n) for n in cluster.workers(SUPERVISORS).values()) != 7:
        assert time.monotonic() < deadline, f"not all 7 workers running: {cluster.workers(SUPERVISORS)}"
        time.sleep(1)
    time.sleep(3)
    return run


def worker_lines(tmp: Path, sid: str, name: str) -> dict[str, list[str]]:
    """The lease and fencing lines of each worker log of topology ``name`` on ``sid``."""
    logs = tmp / sid / "supervisors" / sid / "logs"
    out = {}
    for p in sorted(logs.glob(f"{name}-*.log")):
        out[p.name] = [line[:240] for line in p.read_text(errors="replace").splitlines() if re.search(r"lease|fenced|resumed|paused", line)]
    return out


def finish_and_check(cluster: NetCluster, run: Run, feeders: list[subprocess.Popen[bytes]], marks: dict[str, float], hosts: list[str]) -> dict[str, Any]:
    """Wait for both topologies to commit the whole feed; print the timeline; check counts; return what the caller asserts on.

    Both topologies are killed at the end, and also when a check fails (after printing what
    their supervisors and workers logged last): the next test on the cluster starts clean.
    """
    try:
        return _finish_and_check(cluster, run, feeders, marks, hosts)
    except BaseException:
        for name in (run.alo, run.eo):
            print(diagnosis(cluster, name, hosts, "a check failed"))
            try:
                cluster.squall("kill", name, "-w", "1")
            except AssertionError as exc:  # killed already (the checks kill both at the end)
                print(f"kill {name}: {exc}")
        raise


def _finish_and_check(cluster: NetCluster, run: Run, feeders: list[subprocess.Popen[bytes]], marks: dict[str, float], hosts: list[str]) -> dict[str, Any]:
    for f in feeders:
        assert f.wait(240) == 0
    for name in (run.alo, run.eo):
        deadline = time.monotonic() + 300
        while cluster.committed(name) < run.lines:
            assert time.monotonic() < deadline, f"[{name}] committed {cluster.committed(name)} of {run.lines}"
            time.sleep(2)
    time.sleep(3)
    for name in (run.alo, run.eo):  # the input holds each line once (an idempotent feeder), or no count could be exact
        assert cluster.client("ends", cluster.bootstrap, f"squall.{name}.lines", "2") == run.lines
    truth = direct_count(run.src)
    counts: Counter[str] = Counter(cluster.client("counts", cluster.bootstrap, f"squall.{run.alo}.counts"))
    state: dict[str, int] = cluster.client("state", cluster.pg_url, f"{run.eo}.counts")
    t0 = marks["cut"]
    every = cluster.client("events", cluster.bootstrap, f"{cluster.namespace}.__events")
    print(f"marks (s after the cut): { {k: round(v - t0, 1) for k, v in marks.items()} }")
    for e in every:
        if e.get("topology") in (run.alo, run.eo) and float(e["at"]) >= t0 - 1:
            at = float(e["at"]) - t0
            print(f"  {at:6.1f} s  {e['topology']:<10} {e['event']:<8} {e['supervisor']} w{e['worker']} pid {e.get('pid')} exit {e.get('exit_code')}")
    logs = {name: {h: worker_lines(cluster.tmp, h, name) for h in hosts} for name in (run.alo, run.eo)}
    for by_host in logs.values():
        for h, files in by_host.items():
            for logname, lines in files.items():
                for line in lines:
                    print(f"  {h} {logname}: {line}")
    words = sum(truth.values())
    over = sum(counts.values()) - words
    longest = max(len(WORD.findall(line.decode("utf-8", "replace").lower())) for line in read_lines(run.src))
    print(f"at least once: {words} words, counted {sum(counts.values())}, overcount {over} ({100 * over / words:.2f}%)")
    print(f"exactly once: {sum(state.values())} counted, exact: {state == dict(truth)}")
    letters = {name: cluster.client("dlq", cluster.bootstrap, name) for name in (run.alo, run.eo)}
    for name, heads in letters.items():
        print(f"dead letters of {name}: {len(heads)}" + "".join(f"\n  {h.get('cause')} after {h.get('attempts')}: {h.get('error')}" for h in heads[:5]))
    statuses = {name: json.loads(cluster.squall("status", name, "--json")) for name in (run.alo, run.eo)}
    for name, st in statuses.items():
        keys = ("trees_acked", "trees_failed", "replays", "lease_pauses", "fenced_tuples", "fenced_acker_ops", "fenced_commits")
        print(f"status of {name}: " + ", ".join(f"{k} {st.get(k)}" for k in keys))
        print(f"  re-executed by bolts of {name}: " + ", ".join(f"{c} {v.get('reexecuted')}" for c, v in st.get("components", {}).items() if "reexecuted" in v))
    twice: dict[str, tuple[int, int, int]] = {}
    twice_values: dict[str, list[str]] = {}
    if (cluster.tmp / "kafka").is_dir():  # Apache Kafka: every record ever written is still in the segment files
        log_dirs = sorted((cluster.tmp / "kafka").glob("node-*/data"))
        fails_again: dict[str, int] = {}
        twice = written_twice(log_dirs, [f"squall.{run.alo}.{t}" for t in ("__acker", "__ack_result", "split", "count")], twice_values, fails_again)
        print(f"records of {run.alo} (records, written twice, without idempotence): {twice}")
        print(f"acker fails one producer wrote again (idempotent: a tree failed from two flushes; not counted above): {fails_again}")
    missing = {w: n for w, n in truth.items() if counts.get(w, 0) < n}
    assert not missing, f"{len(missing)} words short at least once, e.g. {list(missing.items())[:5]}"
    assert not any(letters.values()), f"a broker fault dead-lettered records (not poison): {[(n, len(h)) for n, h in letters.items()]}"
    assert not any(dup or plain for _, dup, plain in twice.values()), f"records written twice or without idempotence: {twice}; the values: {twice_values}"
    wrong = {w: (state.get(w), n) for w, n in truth.items() if state.get(w) != n}
    assert not wrong and len(state) == len(truth), f"exactly once is not exact: {len(wrong)} words differ, e.g. {list(wrong.items())[:5]}"
    assert over <= words * min(1.0, MESSAGE_TIMEOUT_S * RATE / run.lines), f"overcount {over} is more than one message timeout's worth of input"
    # Every word counted twice is one that squall status reports as run again: a line a spout
    # replayed or split executed again (at most its words), or a word count executed again.
    alo = statuses[run.alo]
    again = {c: sum(v.get("reexecuted", {}).values()) for c, v in alo.get("components", {}).items()}
    replayed_lines = sum(alo["replays"].values()) + again.get("split", 0)
    counted_again = again.get("count", 0)
    explained = counted_again + longest * replayed_lines
    print(f"overcount {over}: {replayed_lines} lines replayed or split again (at most {longest} words each), {counted_again} words counted again")
    assert over <= explained, f"overcount {over} is more than the replays and re-executions squall status reports can explain ({explained})"
    fenced = {}
    for name, st in statuses.items():
        assert st["contested_tasks"] == [], st["contested_tasks"]
        fenced[name] = (st["fenced_tuples"], st["fenced_acker_ops"], st["fenced_commits"])
        try:
            cluster.squall("kill", name, "-w", "1")
        except AssertionError:
            print(diagnosis(cluster, name, hosts, "did not stop"))
            raise
    print(f"late writes of replaced workers dropped (tuples, acker ops, commits undone): {fenced}")
    # No reader took a record of an older life after its successor's record or epoch marker
    # (issue 52): every such record in the topics is one a reader logged as fenced.
    late = [r for name in (run.alo, run.eo) for t in ("split", "count", "__acker") for r in cluster.client("late", cluster.bootstrap, f"squall.{name}.{t}")]
    refused = fenced_records(cluster.tmp, hosts, (run.alo, run.eo))
    taken = [r for r in late if (r[0], r[1], r[2]) not in refused]
    print(f"records of replaced workers' older lives that landed after a newer life's: {len(late)}, each refused by its reader: {not taken}")
    for r in late[:20]:
        print(f"  {r[0]}[{r[1]}]@{r[2]}: task {r[3]} epoch {r[4]}, after its epoch {r[5]}")
    assert not taken, f"a reader took a record of an older life: {taken[:5]}"
    events = [e for e in every if e.get("topology") in (run.alo, run.eo)]
    return {"events": events, "logs": logs, "over": over, "words": words, "fenced": fenced, "late": late, "counts": counts}


def workers_on(tmp: Path, sid: str, name: str) -> dict[int, dict[str, list[int]]]:
    """The live worker processes of ``name`` on ``sid``: pid -> the tasks it runs (local task ids, by component).

    A worker is ``python -m service.worker PLAN INDEX``; its plan lists each worker's executors.
    """
    out: dict[int, dict[str, list[int]]] = {}
    root = f"{tmp / sid / 'supervisors' / sid / 'topologies' / name}/"
    for pid in subprocess.run(["pgrep", "-f", f"service.worker {root}"], capture_output=True, text=True).stdout.split():
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            at = args.index(b"service.worker")
            plan = json.loads(Path(args[at + 1].decode()).read_text())
            runs: dict[str, list[int]] = {}
            for component, tasks in plan["workers"][int(args[at + 2])]:
                runs.setdefault(component, []).extend(tasks)
            out[int(pid)] = runs
        except (OSError, ValueError, IndexError, KeyError):
            continue
    return out


def zombie_candidates(cluster: NetCluster, name: str) -> dict[str, tuple[str, int, int]]:
    """Per supervisor, a task of ``name`` it runs that writes to a bolt (``split``, else ``lines``): ``(component, task, epoch)``."""
    out: dict[str, tuple[str, int, int]] = {}
    for e in cluster.client("events", cluster.bootstrap, f"{cluster.namespace}.__events"):
        if e.get("topology") == name and e["event"] == "started":
            tasks = sorted(((c, i) for c, i in e.get("tasks", []) if c in ("split", "lines")), key=lambda t: t[0] != "split")
            if tasks:
                out[e["supervisor"]] = (tasks[0][0], tasks[0][1], int(e["epoch"]))
    return out


@dataclass
class Zombie:
    """A replaced life's record, written from the cut-off host (``tests/integration/zombie.py``)."""

    proc: subprocess.Popen[bytes]
    go: Path
    out: Path
    topic: str
    reader: str
    """The component that reads :attr:`topic`."""
    sender: str
    epoch: int
    word: str

    def write(self, partition: int) -> None:
        """Write the record to ``partition`` of :attr:`topic` now."""
        self.go.write_text(str(partition))

    def landed(self, timeout_s: float = 120.0) -> list[int]:
        """``[partition, offset]`` where the broker took it (it waits for the heal and the retransmission)."""
        assert self.proc.wait(timeout_s) == 0, self.out.read_text()
        return list(json.loads(self.out.read_text().splitlines()[-1]))


def start_zombie(cluster: NetCluster, name: str, host: str, task: tuple[str, int, int], tmp: Path) -> Zombie:
    """Connect the zombie on ``host`` now, as ``task``'s life (its component, local task and epoch); it writes once ``go`` exists."""
    from streams.model.loader import load_topology

    component, index, epoch = task
    topology = load_topology(WORDCOUNT, name)
    sender = topology.components[component].task_base + index
    downstream = "split" if component == "lines" else "count"
    topic, word, go, out = f"squall.{name}.{downstream}", f"zombie{uuid.uuid4().hex[:6]}", tmp / "zombie-go", tmp / "zombie.out"
    args = [sys.executable, str(ZOMBIE), cluster.bootstrap, str(go), topic, component, str(sender), str(epoch), word]
    proc = cluster.lan.popen(host, args, out, env=cluster.env())
    deadline = time.monotonic() + 60
    while "connected" not in (out.read_text() if out.exists() else ""):
        assert proc.poll() is None and time.monotonic() < deadline, out.read_text() if out.exists() else "no output"
        time.sleep(0.2)
    return Zombie(proc, go, out, topic, downstream, f"{component} task {sender}", epoch, word)


def restart_workers(tmp: Path, sid: str, name: str, components: set[str]) -> dict[str, list[int]]:
    """SIGTERM the workers of ``name`` on ``sid`` that run any of ``components``; returns the tasks they ran, by component.

    Each drains and exits, and its supervisor starts it again (a worker whose lease is lapsed
    when told exits without draining: call it on a host in touch with the broker).
    """
    out: dict[str, list[int]] = {}
    for pid, runs in workers_on(tmp, sid, name).items():
        if set(runs) & components:
            os.kill(pid, signal.SIGTERM)
            for component, tasks in runs.items():
                out.setdefault(component, []).extend(tasks)
    return out


FENCED_LINE = re.compile(r"fenced (\S+)\[(\d+)\]@(\d+)")


def fenced_records(tmp: Path, hosts: list[str], names: tuple[str, ...]) -> set[tuple[str, int, int]]:
    """Every record the workers of ``names`` logged as fenced (``fenced TOPIC[P]@OFFSET``), on every host."""
    out = set()
    for sid in hosts:
        for name in names:
            for path in (tmp / sid / "supervisors" / sid / "logs").glob(f"{name}-*.log"):
                out |= {(m[1], int(m[2]), int(m[3])) for m in FENCED_LINE.finditer(path.read_text(errors="replace"))}
    return out


def diagnosis(cluster: NetCluster, name: str, hosts: list[str], what: str) -> str:
    """What the supervisors and the workers of ``name`` logged last (a kill that did not finish, a check that failed)."""
    out = [f"--- [{name}] {what}: the supervisors' last lines about it, and each worker log's tail"]
    for h in hosts:
        serve = cluster.tmp / f"serve-{h}.log"
        lines = [line[:300] for line in serve.read_text(errors="replace").splitlines() if name in line or "Traceback" in line or "supervisor" in line]
        out += [f"  serve-{h}: {line}" for line in lines[-25:]]
        for p in sorted((cluster.tmp / h / "supervisors" / h / "logs").glob(f"{name}-*.log")):
            text = p.read_text(errors="replace").splitlines()
            errors = [line for line in text[:-12] if "Error" in line or "Traceback" in line]
            out += [f"  {h} {p.name} (an earlier error): {line[:300]}" for line in errors[-6:]]
            out += [f"  {h} {p.name}: {line[:300]}" for line in text[-12:]]
    return "\n".join(out)


def at_the_cut(events: list[dict[str, Any]], victim: str, cut: float) -> dict[int, tuple[str, int]]:
    """The worker processes ``victim`` ran at ``cut``: pid -> (topology, worker index)."""
    running: dict[int, tuple[str, int]] = {}
    for e in events:
        if e["supervisor"] == victim and float(e["at"]) < cut:
            if e["event"] == "started":
                running[e["pid"]] = (e["topology"], e["worker"])
            else:
                running.pop(e.get("pid", -1), None)
    return running


def lapsed_in_logs(logs: dict[str, dict[str, dict[str, list[str]]]], victim: str, running: dict[int, tuple[str, int]]) -> dict[str, bool]:
    """Whether the log of each worker running at the cut says its lease lapsed."""
    return {f"{t}-w{w}.log": any("lease lapsed" in line for line in logs[t][victim].get(f"{t}-w{w}.log", [])) for t, w in running.values()}


def never_beside(logs: dict[str, dict[str, dict[str, list[str]]]], victim: str) -> list[str]:
    """Workers on ``victim`` that resumed after a lapse and were then fenced: they processed beside their replacement."""
    bad = []
    for name, by_host in logs.items():
        for f, lines in by_host.get(victim, {}).items():
            text = "\n".join(lines)
            if "resumed after" in text and re.search(r"worker w\d+ fenced:", text):
                bad.append(f"{name}/{f}")
    return bad
