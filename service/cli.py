"""The ``squall`` command line (typer)."""

from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path
from typing import Annotated

import typer

from service.broker import EmbeddedBroker
from service.config import ServiceSettings
from service.progress import Progress
from service.runner import Job
from streams.exceptions import SquallError

app = typer.Typer(help="Squall: Storm's guaranteed message processing on Kafka.", no_args_is_help=True)


@app.command()
def run(
    topology_file: Annotated[Path, typer.Argument(help="Python file defining topology()")],
    input: Annotated[Path | None, typer.Option("--input", help="text file or folder of .txt files (default: Shakespeare)")] = None,  # noqa: A002
    output: Annotated[Path | None, typer.Option("--output", help="JSON file for the results")] = None,
    bootstrap_servers: Annotated[
        str | None, typer.Option("--bootstrap-servers", envvar="SQUALL_BOOTSTRAP_SERVERS", help="use this Kafka; no embedded broker")
    ] = None,
    timeout: Annotated[float, typer.Option(help="give up after this many seconds")] = 3600.0,
    progress: Annotated[bool, typer.Option(help="show live progress")] = True,
) -> None:
    """Run a topology on real input until every source record is acked, then summarise."""
    settings = ServiceSettings(bootstrap_servers=bootstrap_servers) if bootstrap_servers else ServiceSettings()
    logging.basicConfig(level=settings.log_level if settings.log_level != "INFO" else "WARNING", format="%(asctime)s %(levelname)s %(name)s %(message)s")
    job = Job(topology_file, input, output, settings)
    bar = Progress() if progress else None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        job.start()
        summary = job.wait(timeout, on_progress=bar)
    except SquallError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    finally:
        if bar is not None:
            bar.close()
        job.close()
    typer.echo("\n".join(summary.lines()))


@app.command()
def broker(port: Annotated[int, typer.Option(help="TCP port")] = 9092) -> None:
    """Run the embedded broker in the foreground (memory storage; for local use)."""
    b = EmbeddedBroker(port=port)
    b.start()
    typer.echo(f"embedded broker at {b.bootstrap}; Ctrl-C to stop")
    try:
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    finally:
        b.stop()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
