"""The ``squall`` command line (typer): Storm's verbs on Kafka.

A user's mistake prints one line (``error: ...``, naming the file, line, component, key,
topology or broker) and exits 2; ``--verbose`` also prints the traceback. Verbs other than
``run``, ``broker`` and ``serve`` talk to a running service through ``bootstrap.servers``
(``--bootstrap-servers``, ``SQUALL_BOOTSTRAP_SERVERS``, ``squall.yaml``; default
127.0.0.1:9092, where ``squall serve --embedded-broker`` listens).
"""

from __future__ import annotations

import json
import logging
import signal
import sys
import time
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from service.cli.app import DEFAULT_BOOTSTRAP, Bootstrap, app, client, settings, user_errors
from service.cli.ops import register_diagnosis_verbs

if TYPE_CHECKING:
    from service.brokers.apache_kafka import ApacheKafka
    from service.brokers.embedded import EmbeddedBroker


@app.command()
@user_errors
def run(
    topology_file: Annotated[Path, typer.Argument(help="Python file defining topology()")],
    input: Annotated[Path | None, typer.Option("--input", help="text file or folder of .txt files (default: Shakespeare)")] = None,  # noqa: A002
    output: Annotated[Path | None, typer.Option("--output", help="JSON file for the results")] = None,
    show: Annotated[list[str] | None, typer.Option("--show", help="print the tuples of COMPONENT[:STREAM] as JSON lines (repeatable)")] = None,
    timeout: Annotated[float, typer.Option(help="give up after this many seconds")] = 3600.0,
    progress: Annotated[bool, typer.Option(help="show live progress")] = True,
    bootstrap_servers: Bootstrap = None,
) -> None:
    """Run a topology on real input until every source record is acked, then summarise."""
    from service.run.progress import Progress
    from service.run.runner import Job

    s = settings(bootstrap_servers)
    logging.basicConfig(level=s.log_level if s.log_level != "INFO" else "WARNING", format="%(asctime)s %(levelname)s %(name)s %(message)s")
    job = Job(topology_file, input, output, s, show=show)
    bar = Progress() if progress else None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        job.start()
        summary = job.wait(timeout, on_progress=bar)
        shown = job.shown()
    finally:
        if bar is not None:
            bar.close()
        job.close()
    for stream, tuples in shown.items():
        for t in tuples:
            typer.echo(json.dumps({"stream": stream, "tuple": t}, ensure_ascii=False))
    typer.echo("\n".join(summary.lines()))


@app.command()
@user_errors
def broker(
    port: Annotated[int, typer.Option(help="TCP port (of the first node, with --kafka)")] = 9092,
    kafka: Annotated[bool, typer.Option("--kafka", help="run Apache Kafka (KRaft, from Maven Central) instead of the embedded broker")] = False,
    nodes: Annotated[int, typer.Option(help="with --kafka: how many nodes (3 gives replication 3, min.insync.replicas 2)")] = 1,
    data_dir: Annotated[Path | None, typer.Option(help="with --kafka: where its logs and data go (default: a temporary folder, removed on exit)")] = None,
    listen: Annotated[str, typer.Option(help="the address the broker binds (0.0.0.0: every interface, with --advertise)")] = "127.0.0.1",
    advertise: Annotated[str | None, typer.Option(help="the host the broker tells clients to connect to, one other hosts route to (default: --listen)")] = None,
) -> None:
    """Run a broker in the foreground until SIGTERM or Ctrl-C: the embedded one (memory only, for trying Squall) or Apache Kafka.

    It serves this host only unless ``--listen`` binds an address other hosts reach and
    ``--advertise`` names it (supervisors on several hosts).
    """
    from service.brokers.addresses import listen_and_advertise
    from service.brokers.apache_kafka import KAFKA_VERSION, ApacheKafka
    from service.brokers.embedded import EmbeddedBroker

    listen, shown = listen_and_advertise(listen, advertise)  # a mistake is one line before anything starts
    bound = "" if listen == shown else f", listening on {listen}"
    # Block the signals first: sigwait only receives a blocked signal; unblocked, SIGTERM's
    # default action would end this process and leave the broker running.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    server: EmbeddedBroker | ApacheKafka
    if kafka:
        server = ApacheKafka(nodes=nodes, workdir=data_dir, config={}, ports_from=port, listen=listen, advertise=shown)
        where = server.start()
        typer.echo(f"Apache Kafka {KAFKA_VERSION} at {where} ({nodes} node{'s' if nodes > 1 else ''}{bound}); Ctrl-C to stop", err=True)
    else:
        server = EmbeddedBroker(port=port, listen=listen, advertise=shown)
        where = server.start()
        typer.echo(f"embedded broker at {where} (memory only: for trying Squall, not for production{bound}); Ctrl-C to stop", err=True)
    try:
        got = signal.sigwait({signal.SIGINT, signal.SIGTERM})
        typer.echo(f"stopping the broker ({signal.Signals(got).name})", err=True)
    finally:
        server.stop()


@app.command()
@user_errors
def serve(
    embedded_broker: Annotated[bool, typer.Option("--embedded-broker", help="also run the embedded broker (memory storage)")] = False,
    broker_port: Annotated[int, typer.Option(help="the embedded broker's port")] = 9092,
    http_port: Annotated[int | None, typer.Option(help="/healthz, /readyz, /metrics port (default 9470)")] = None,
    http_host: Annotated[str | None, typer.Option(help="HTTP bind address (default 127.0.0.1)")] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            envvar="SQUALL_DATA_DIR",
            metavar="PATH",
            help="where the supervisor keeps its workers' plans, logs and SQLite state (default ~/.cache/squall)",
        ),
    ] = None,
    bootstrap_servers: Bootstrap = None,
) -> None:
    """Run a supervisor until SIGTERM: it runs its share of every submitted topology's workers."""
    from service.brokers.embedded import EMBEDDED_WARNING, EmbeddedBroker
    from service.supervisor.daemon import SupervisorService

    s = settings(bootstrap_servers)
    if http_port is not None:
        s.http_port = http_port
    if http_host is not None:
        s.http_host = http_host
    if data_dir is not None:
        s.data_dir = data_dir
    logging.basicConfig(level=s.log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    embedded = EmbeddedBroker(port=broker_port) if embedded_broker else None
    bootstrap = embedded.start() if embedded is not None else (s.resolved_bootstrap() or DEFAULT_BOOTSTRAP)
    if embedded is not None:
        typer.echo(f"warning: {EMBEDDED_WARNING}", err=True)
    service = SupervisorService(s, bootstrap, embedded=embedded)
    signal.signal(signal.SIGTERM, lambda *_: service.stop())
    signal.signal(signal.SIGINT, lambda *_: service.stop())
    typer.echo(f"supervisor {service.id}: bootstrap {bootstrap}, http://{service.http.host}:{service.http.port}", err=True)
    try:
        service.run()
    finally:
        if embedded is not None:
            embedded.stop()


@app.command("submit")
@user_errors
def submit_cmd(
    topology_file: Annotated[Path, typer.Argument(help="Python file defining topology()")],
    name: Annotated[str | None, typer.Option("--name", help="topology name (default: the file's)")] = None,
    conf: Annotated[list[str] | None, typer.Option("-c", help="config override key=value (repeatable)")] = None,
    requirements: Annotated[
        Path | None, typer.Option("--requirements", help="a requirements file: resolved here, shipped as wheels, installed offline on every supervisor")
    ] = None,
    package: Annotated[Path | None, typer.Option("--package", help="a package directory with the topology file in it, shipped with it")] = None,
    wheel: Annotated[list[Path] | None, typer.Option("--wheel", help="a wheel to ship and install with the topology (repeatable)")] = None,
    bootstrap_servers: Bootstrap = None,
) -> None:
    """Store a topology in the control topic and start it (storm jar), with its dependencies if given."""
    from service.control.client import parse_conf, submit

    line = submit(client(bootstrap_servers), topology_file, name, parse_conf(conf or []), time.time(), requirements, package, tuple(wheel or ()))
    typer.echo(line)


@app.command("list")
@user_errors
def list_cmd(as_json: Annotated[bool, typer.Option("--json", help="machine-readable")] = False, bootstrap_servers: Bootstrap = None) -> None:
    """Each topology's status, uptime, workers, executors and tasks (storm list)."""
    from service.query.status import list_topologies
    from service.query.views import list_lines

    for line in list_lines(list_topologies(client(bootstrap_servers), time.time()), as_json):
        typer.echo(line)


@app.command("kill")
@user_errors
def kill_cmd(
    name: Annotated[str, typer.Argument(help="topology name")],
    wait: Annotated[float | None, typer.Option("-w", "--wait", help="seconds to let trees in flight finish (default: the message timeout)")] = None,
    bootstrap_servers: Bootstrap = None,
) -> None:
    """Deactivate, wait, stop the workers and remove the topology (storm kill -w)."""
    from service.control.client import kill_topology

    typer.echo(kill_topology(client(bootstrap_servers), name, wait, time.time()))


@app.command("activate")
@user_errors
def activate_cmd(name: Annotated[str, typer.Argument(help="topology name")], bootstrap_servers: Bootstrap = None) -> None:
    """Resume the spouts (storm activate)."""
    from service.control.client import set_active

    typer.echo(set_active(client(bootstrap_servers), name, True, time.time()))


@app.command("deactivate")
@user_errors
def deactivate_cmd(name: Annotated[str, typer.Argument(help="topology name")], bootstrap_servers: Bootstrap = None) -> None:
    """Pause the spouts; bolts keep draining (storm deactivate)."""
    from service.control.client import set_active

    typer.echo(set_active(client(bootstrap_servers), name, False, time.time()))


class DebugSwitch(StrEnum):
    """``squall debug``'s state."""

    on = "on"
    off = "off"


@app.command("debug")
@user_errors
def debug_cmd(
    name: Annotated[str, typer.Argument(help="topology name")],
    switch: Annotated[DebugSwitch, typer.Argument(help="on: trace a sample of the trees; off: stop")],
    sampling_pct: Annotated[float, typer.Option("--sampling-pct", help="with on: the percentage of trees traced (0-100)")] = 10.0,
    bootstrap_servers: Bootstrap = None,
) -> None:
    """Sampled tracing on or off, live: no worker restarts (Storm UI's debug; see squall trace)."""
    from service.control.client import set_debug_tracing

    typer.echo(set_debug_tracing(client(bootstrap_servers), name, switch == DebugSwitch.on, sampling_pct, time.time()))


@app.command("rebalance")
@user_errors
def rebalance_cmd(
    name: Annotated[str, typer.Argument(help="topology name")],
    workers: Annotated[int | None, typer.Option("-n", help="worker processes")] = None,
    executors: Annotated[list[str] | None, typer.Option("-e", help="COMPONENT=EXECUTORS (repeatable)")] = None,
    bootstrap_servers: Bootstrap = None,
) -> None:
    """Change workers and executors of a running topology; tasks stay fixed (storm rebalance)."""
    from service.control.client import parse_executors, rebalance_topology

    typer.echo(rebalance_topology(client(bootstrap_servers), name, workers, parse_executors(executors or []), time.time()))


@app.command("update")
@user_errors
def update_cmd(
    name: Annotated[str, typer.Argument(help="topology name")],
    topology_file: Annotated[Path | None, typer.Argument(help="the new code: a Python file defining topology()")] = None,
    conf: Annotated[list[str] | None, typer.Option("-c", help="config override key=value, over the running ones (repeatable)")] = None,
    to_version: Annotated[int | None, typer.Option("--to-version", help="roll to stored version N instead (a rollback)")] = None,
    drain_all: Annotated[
        bool, typer.Option("--drain-all", help="an incompatible change: stop every worker before the new ones start (state and offsets kept)")
    ] = False,
    requirements: Annotated[Path | None, typer.Option("--requirements", help="a requirements file for the new version (default: the running bundle)")] = None,
    package: Annotated[Path | None, typer.Option("--package", help="a package directory with the new topology file in it")] = None,
    wheel: Annotated[list[Path] | None, typer.Option("--wheel", help="a wheel for the new version (repeatable)")] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="seconds to follow the roll (it goes on after)")] = 600.0,
    bootstrap_servers: Bootstrap = None,
) -> None:
    """Roll new code onto a running topology, one worker at a time, with no downtime; or roll back with --to-version."""
    from service.control.client import parse_conf
    from service.control.update import update_topology

    line = update_topology(
        client(bootstrap_servers),
        name,
        topology_file,
        parse_conf(conf or []),
        time.time(),
        to_version=to_version,
        drain_all=drain_all,
        requirements=requirements,
        package=package,
        wheels=tuple(wheel or ()),
        timeout_s=timeout,
        progress=lambda line: typer.echo(line, err=True),
    )
    typer.echo(line)


@app.command("status")
@user_errors
def status_cmd(
    name: Annotated[str, typer.Argument(help="topology name")],
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable")] = False,
    bootstrap_servers: Bootstrap = None,
) -> None:
    """The Storm UI's topology page: per component counts, latency, capacity, lag; errors."""
    from service.query.status import status
    from service.query.views import status_lines

    for line in status_lines(status(client(bootstrap_servers), name, time.time()), as_json):
        typer.echo(line)


register_diagnosis_verbs()

__all__ = ["app", "main"]


def main() -> None:
    """The ``squall`` entry point: a user's mistake prints one line and exits 2."""
    app()


if __name__ == "__main__":
    main()
