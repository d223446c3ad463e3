"""The diagnosis verbs of the ``squall`` command line: ``errors``, ``trace``, ``dlq``, ``logs``, ``monitor``, ``set_log_level``.

Defined on :data:`service.cli.app.app` when this module is imported; :mod:`service.cli.main`
imports it (:func:`register_diagnosis_verbs`). The same one-line errors and exit code 2 for a
user's mistake.
"""

from __future__ import annotations

import time
from enum import StrEnum
from typing import Annotated

import typer

from service.cli.app import Bootstrap, app, client, user_errors
from service.exceptions import UsageError


@app.command("errors")
@user_errors
def errors_cmd(
    name: Annotated[str, typer.Argument(help="topology name")],
    component: Annotated[str | None, typer.Argument(help="only this component's errors")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="the last N reports")] = 20,
    show_traceback: Annotated[bool, typer.Option("--traceback", help="print each report's traceback")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable (schemas/error.schema.json)")] = False,
    bootstrap_servers: Bootstrap = None,
) -> None:
    """The components' last errors: exceptions, fail reasons, poison records (storm get-errors)."""
    from service.query.errors import read_errors
    from service.query.views import errors_text

    c = client(bootstrap_servers)
    for line in errors_text(name, read_errors(c.bootstrap, name, component), component, limit, show_traceback, as_json):
        typer.echo(line)


@app.command("trace")
@user_errors
def trace_cmd(
    name: Annotated[str, typer.Argument(help="topology name")],
    root: Annotated[str | None, typer.Argument(help="a root id (as listed): print that tree")] = None,
    failed: Annotated[bool, typer.Option("--failed", help="every sampled tree that failed")] = False,
    timed_out: Annotated[bool, typer.Option("--timed-out", help="every sampled tree that timed out: how many each component held, then the trees")] = False,
    held_by: Annotated[str | None, typer.Option("--held-by", metavar="COMPONENT", help="only the timed-out trees it held (implies --timed-out)")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="at most N trees")] = 20,
    bootstrap_servers: Bootstrap = None,
) -> None:
    """Sampled trees as timelines (topology.debug): every emit, receive, ack and fail, and who held a tree that timed out."""
    from service.query.trace import held_summary, parse_root, read_trees, summary_lines, tree_lines
    from service.query.trace import timed_out as timed_out_roots
    from streams.monitoring.trace import outcome

    trees = read_trees(client(bootstrap_servers).bootstrap, name)
    if root is not None:
        r = parse_root(root)
        if r not in trees:
            raise UsageError(f"[{name}] tree {root} was not sampled (squall trace {name} lists the sampled trees)")
        chosen = [r]
    elif (timed_out or held_by is not None) and not failed:
        every = timed_out_roots(trees)
        chosen = timed_out_roots(trees, held_by)[-limit:]
        for line in held_summary(trees, every):
            typer.echo(line)
        if not every:
            typer.echo(f"{name}: no sampled tree timed out")
            return
        if not chosen:
            typer.echo(f"{name}: no sampled tree that timed out was held by [{held_by}]")
            return
    elif failed or timed_out:
        want = {"failed"} if failed else set()
        want |= {"timed out"} if timed_out else set()
        chosen = [r for r, ev in sorted(trees.items(), key=lambda kv: kv[1][0].at) if outcome(ev) in want][-limit:]
    else:
        if not trees:
            typer.echo(f"{name}: no sampled trees (submit with -c topology.debug=true; squall.trace.sample.rate sets the share)")
        for line in summary_lines(trees, limit):
            typer.echo(line)
        return
    if not chosen:
        typer.echo(f"{name}: no sampled tree {'failed' if failed else 'timed out'}")
    for r in chosen:
        for line in tree_lines(r, trees[r]):
            typer.echo(line)


@app.command("set_log_level")
@user_errors
def set_log_level_cmd(
    name: Annotated[str, typer.Argument(help="topology name")],
    levels: Annotated[list[str] | None, typer.Option("-l", help="LOGGER=LEVEL[:SECONDS] (ROOT: the root logger); repeatable")] = None,
    resets: Annotated[list[str] | None, typer.Option("-r", help="LOGGER: back to its own level; repeatable")] = None,
    bootstrap_servers: Bootstrap = None,
) -> None:
    """Change loggers' levels in the topology's workers, for a while or until reset (storm set_log_level)."""
    from service.control.client import set_log_level

    typer.echo(set_log_level(client(bootstrap_servers), name, levels or [], resets or [], time.time()))


@app.command("logs")
@user_errors
def logs_cmd(
    name: Annotated[str, typer.Argument(help="topology name")],
    worker: Annotated[int | None, typer.Option("--worker", "-w", help="only worker N (required with -f)")] = None,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="keep printing what the worker writes (Ctrl-C to stop)")] = False,
    tail_bytes: Annotated[int, typer.Option("--bytes", help="start this many bytes before the end")] = 8192,
    bootstrap_servers: Bootstrap = None,
) -> None:
    """A topology's worker logs, from the supervisors that run them."""
    from service.control.client import events
    from service.query.logs import fetch, last_started

    if follow and worker is None:
        raise UsageError(f"[{name}] logs -f follows one worker: give -w N")
    c = client(bootstrap_servers)
    c.connect()
    started = last_started(events(c, name), worker)
    if not started:
        raise UsageError(f"[{name}] no worker{f' w{worker}' if worker is not None else ''} was started by a supervisor that serves logs")
    for w, e in sorted(started.items()):
        body, offset = fetch(e["http"], name, w, -tail_bytes)
        if worker is None:
            typer.echo(f"== {name} w{w} on supervisor {e['supervisor']} ==")
        typer.echo(body.decode("utf-8", "replace"), nl=False)
        try:
            while follow:
                time.sleep(1.0)
                body, offset = fetch(e["http"], name, w, offset)
                typer.echo(body.decode("utf-8", "replace"), nl=False)
        except KeyboardInterrupt:
            return


@app.command("monitor")
@user_errors
def monitor_cmd(
    name: Annotated[str, typer.Argument(help="topology name")],
    interval: Annotated[float, typer.Option("--interval", "-i", help="seconds between samples", min=0.5)] = 4.0,
    component: Annotated[str | None, typer.Option("--component", "-m", help="only this component")] = None,
    count: Annotated[int, typer.Option("--count", help="stop after N samples (default: until Ctrl-C)")] = 0,
    bootstrap_servers: Bootstrap = None,
) -> None:
    """Live rates per component: emitted, transferred, executed, acked, failed per second (storm monitor)."""
    from service.control.client import component_kinds
    from service.query.monitor import rate_lines, totals
    from streams.monitoring.board import StatsBoard

    c = client(bootstrap_servers)
    kinds = component_kinds(c, name)
    if component is not None and component not in kinds:
        raise UsageError(f"[{name}] has no component {component!r} (it has {sorted(kinds)})")
    board = StatsBoard(c.bootstrap, name, c.kafka.get("consumer"))
    try:
        board.read_to_now_or_reopen()
        before, at = totals(board, kinds, component), time.monotonic()
        n = 0
        while count <= 0 or n < count:
            time.sleep(interval)
            board.read_to_now_or_reopen()
            after, now = totals(board, kinds, component), time.monotonic()
            for line in rate_lines(before, after, now - at, time.strftime("%H:%M:%S")):
                typer.echo(line)
            before, at, n = after, now, n + 1
    except KeyboardInterrupt:
        pass
    finally:
        board.close()


class DlqAction(StrEnum):
    """What ``squall dlq NAME ACTION`` does."""

    list = "list"
    show = "show"
    replay = "replay"


@app.command("dlq")
@user_errors
def dlq_cmd(
    name: Annotated[str, typer.Argument(help="topology name")],
    action: Annotated[DlqAction, typer.Argument(help="list: one line each; show: headers, record and why; replay: back to the spout's topic")],
    offsets: Annotated[list[int] | None, typer.Argument(help="dead-letter offsets (the @N that list prints)")] = None,
    replay_all: Annotated[bool, typer.Option("--all", help="replay: every dead letter chosen by --component and --cause")] = False,
    component: Annotated[str | None, typer.Option("--component", "-c", help="only the records this component failed (or dead-lettered)")] = None,
    cause: Annotated[str | None, typer.Option("--cause", help="only this cause: poison, fail, timeout")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="list: the last N")] = 20,
    bootstrap_servers: Bootstrap = None,
) -> None:
    """A topology's dead letters: list them, show one with the error report that says why, or replay them as new deliveries."""
    from service.control.client import spout_ids
    from service.query.dlq import choose, explain, full_report, read_dead_letters, replay, show_lines
    from service.query.errors import read_errors
    from service.query.views import dlq_list_text

    c = client(bootstrap_servers)
    if action is DlqAction.replay and not offsets and not replay_all:
        raise UsageError("name the dead letters to replay (offsets from squall dlq NAME list), or give --all")
    if action is DlqAction.list and not offsets:
        for line in dlq_list_text(name, read_dead_letters(c.bootstrap, name), component, cause, limit):
            typer.echo(line)
        return
    letters = choose(read_dead_letters(c.bootstrap, name), offsets or (), component, cause)
    if not letters:
        typer.echo(f"{name}: no dead letters{' chosen' if offsets or component or cause else ''}")
        return
    if action is DlqAction.list:
        for d in letters[-limit:] if limit > 0 else []:
            typer.echo(d.line())
    elif action is DlqAction.show:
        reports = read_errors(c.bootstrap, name)
        for d in letters:
            for line in show_lines(d, explain(d, reports), full_report(d, reports)):
                typer.echo(line)
    else:
        per_topic = replay(c.bootstrap, name, letters, spout_ids(c, name))
        typer.echo("replayed " + ", ".join(f"{n} records to {topic}" for topic, n in sorted(per_topic.items())))


def register_diagnosis_verbs() -> None:
    """Nothing to do: importing this module defined the verbs on the shared app (the call makes :mod:`service.cli.main`'s dependency explicit)."""
