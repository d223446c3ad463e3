"""Squall's exception hierarchy.

``SquallError`` is the single root for every package (``acker`` and ``service``
re-export it). The split that matters at run time:

* :class:`FailedException` -- *fail this tuple, replay it*. Raised by user code in a
  bolt; the runtime fails the input tuple, the acker tells the spout, and the spout
  replays the source record (bounded retries, then the dead-letter topic).
* :class:`FatalError` -- *stop*. The executor cannot go on (bad topology, bad config,
  a broker that refuses to create topics). It is logged with the component id and the
  worker exits non-zero.
"""

from __future__ import annotations


class SquallError(Exception):
    """Root of every error Squall raises."""


class FailedException(SquallError):
    """Fail the current input tuple so that its tree is replayed (Storm's FailedException)."""


class FatalError(SquallError):
    """An error the executor cannot recover from; the worker stops."""


class TopologyError(FatalError):
    """The topology is invalid. The message names the component (and stream/field)."""


class ConfigError(FatalError):
    """A configuration value is missing or invalid. The message names the key."""


class DecodeError(SquallError):
    """A record could not be decoded (a poison record).

    Attributes name where it came from so that the dead-letter record and the log line
    say exactly which record it was: ``component``, ``topic``, ``partition``, ``offset``.
    """

    def __init__(self, reason: str, *, component: str, topic: str, partition: int, offset: int) -> None:
        self.reason = reason
        self.component = component
        self.topic = topic
        self.partition = partition
        self.offset = offset
        super().__init__(f"[{component}] cannot decode record {topic}[{partition}]@{offset}: {reason}")


class StateError(FatalError):
    """The state store cannot be opened or written (the message names the state and the store)."""


class StateFencedError(StateError):
    """A Trident state refused a commit: a newer owner of its writer (a committer task) committed already (a replaced worker's late commit; issue 29).

    The message names the state, the writer and both epochs. Fatal: the old owner must stop.
    """


class BatchBehindStateError(FailedException):
    """A batch arrived whose txid is older than what the state already holds for a key (Trident: "batch is behind state").

    The message names the state, the key and both txids. It fails the batch (it is replayed)
    rather than stopping the worker.
    """


__all__ = [
    "BatchBehindStateError",
    "ConfigError",
    "DecodeError",
    "FailedException",
    "FatalError",
    "SquallError",
    "StateError",
    "StateFencedError",
    "TopologyError",
]
