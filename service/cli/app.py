"""What every ``squall`` verb shares: the typer app, ``--verbose``, one-line user errors, the service settings and the control-plane client.

The CLI imports only what a verb needs: a module here imports typer and the light exceptions at
the top, and each verb imports its own machinery (settings, Kafka clients, the runner) in its
body, so ``squall --help`` loads no Kafka client and no topology model.
"""

from __future__ import annotations

import functools
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from streams.exceptions import SquallError

if TYPE_CHECKING:
    from service.config import ServiceSettings
    from service.control.client import Client

app = typer.Typer(help="Squall: Storm's guaranteed message processing on Kafka.", no_args_is_help=True, pretty_exceptions_enable=False)
DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
F = TypeVar("F", bound=Callable[..., Any])


class State:
    """Process-wide CLI state: ``--verbose`` (tracebacks on user errors)."""

    verbose = False


def user_errors(fn: F) -> F:
    """Print a SquallError as one line and exit 2 (a traceback only with --verbose)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SquallError as exc:
            if State.verbose:
                traceback.print_exc()
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None

    return wrapper  # type: ignore[return-value]


Bootstrap = Annotated[str | None, typer.Option("--bootstrap-servers", envvar="SQUALL_BOOTSTRAP_SERVERS", help="the Kafka to use (HOST:PORT,...)")]


@app.callback()
def main_options(verbose: Annotated[bool, typer.Option("--verbose", "-v", help="print tracebacks")] = False) -> None:
    """Options for every verb (``--verbose``)."""
    State.verbose = verbose


def settings(bootstrap: str | None) -> ServiceSettings:
    """The service settings.

    A service file's ``kafka: {security: ...}`` goes to the env, so every Kafka client of
    this process and of the workers it starts uses it.
    """
    from service.config import ServiceSettings

    s = ServiceSettings(bootstrap_servers=bootstrap) if bootstrap else ServiceSettings()
    s.export_kafka_security()
    return s


def client(bootstrap: str | None) -> Client:
    """A control-plane client for the verbs, from the service settings."""
    from service.control.client import Client
    from service.control.log import ControlTopics

    s = settings(bootstrap)
    return Client(s.resolved_bootstrap() or DEFAULT_BOOTSTRAP, s.topology_layer(), s.kafka_overrides(), ControlTopics(s.control_namespace), s.data_dir / "envs")
