"""Service errors. All derive from :class:`streams.exceptions.SquallError`."""

from __future__ import annotations

from streams.exceptions import ConfigError, FatalError, SquallError


class BrokerError(FatalError):
    """The embedded broker could not start, or a broker refused an admin request."""


class BrokerAccessError(BrokerError):
    """A secured broker refused this client: its SASL login, a TLS certificate, or an ACL.

    The message names the broker and what it refused (:mod:`service.brokers.access`); the CLI
    prints it and exits 2.
    """


class WorkerDied(FatalError):
    """A worker process exited unexpectedly (message names the worker and its components)."""


class ServerError(FatalError):
    """A throw-away server (PostgreSQL) for tests and benchmarks could not start (message says why)."""


class InputError(SquallError):
    """The job's input path is missing or unreadable (message names the path)."""


__all__ = [
    "BrokerAccessError",
    "BrokerError",
    "ConfigError",
    "ControlError",
    "DepsError",
    "FatalError",
    "InputError",
    "ServerError",
    "SquallError",
    "UsageError",
    "WorkerDied",
]


class ControlError(SquallError):
    """A control-plane request is refused (unknown topology, name in use, bad rebalance...).

    A user's mistake: the CLI prints the message (it names the topology or component) and exits 2.
    """


class UsageError(SquallError):
    """A CLI argument is wrong (a missing file, a bad ``-c key=value``): one line, exit 2."""


class DepsError(SquallError):
    """A topology's dependencies cannot be bundled or installed (the message names the file or the topology, and says pip's words).

    At submit a user's mistake (a requirement that conflicts with Squall's own packages, a
    missing file): the CLI prints it and exits 2. On a supervisor, the topology's workers do not
    start there and ``squall status`` shows it; other topologies are not affected.
    """
