"""Errors of the test kit (:mod:`streams.testing`)."""

from __future__ import annotations

from streams.exceptions import SquallError


class KitError(SquallError):
    """The kit cannot run what it was given (fatal; the message names the component).

    An unknown component in ``inputs`` or a fault, input for a spout that does not read
    Kafka, or a topology kind it does not run.
    """


class NotSettledError(KitError):
    """The run reached its simulated-time limit with trees still in flight.

    The message says which spouts and how many trees: a bolt that never acks, say, or a
    window that never fires.
    """
