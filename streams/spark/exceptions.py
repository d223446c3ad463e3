"""Errors of the Spark integration (all under :class:`streams.exceptions.SquallError`).

* :class:`SparkSourceError` -- fatal: the ``squall-kafka`` source cannot read an offset
  range it planned (names topic, partition and offsets). Spark fails the micro-batch and
  the query stops; a restart resumes from the checkpoint.
* :class:`SparkSinkError` -- fatal for the task or the driver's commit: records could not
  be delivered in time. Spark retries the task, then fails the batch, which is re-run after
  a restart (at-least-once output).
* :class:`SparkBoltError` -- a SparkBolt is misdeclared or its function returned a
  malformed result (names the component).
"""

from __future__ import annotations

from streams.exceptions import FatalError, TopologyError


class SparkSourceError(FatalError):
    """The source could not read a planned offset range."""


class SparkSinkError(FatalError):
    """The sink could not deliver its records."""


class SparkBoltError(TopologyError):
    """A SparkBolt is misdeclared or its function broke its contract."""
