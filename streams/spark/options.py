"""Options of the ``squall-kafka`` source and sink (Spark passes them as strings).

===========================  ==============================================================
``bootstrap.servers``        Kafka bootstrap servers (also ``kafka.bootstrap.servers``); required
``subscribe``                source: comma-separated topics to read; required
``startingOffsets``          source: ``earliest`` (default) or ``latest`` for a new query;
                             a restarted query resumes from its checkpoint
``maxOffsetsPerTrigger``     source: at most this many records per micro-batch (default: all)
``maxTasks``                 source: Spark tasks per micro-batch (default: the cores)
``groupId``                  source: also commit processed offsets to this Kafka group
                             (for lag dashboards only; the checkpoint is the truth). Spark
                             commits a source when it plans the next batch, so the group
                             can trail by one batch while no new data arrives
``readTimeoutSecs``          source: give up reading a planned range after this (seconds; 60)
``topic``                    sink: topic for rows with no ``topic`` column / null topic
``flushTimeoutSecs``         sink: wait this long for deliveries per task (seconds; 60)
``kafka.<setting>``          passed to the consumer (source) or producer (sink), e.g.
                             ``kafka.linger.ms`` (sink default 20), ``kafka.fetch.wait.max.ms``
                             (source default 50: the embedded broker always waits it out),
                             ``kafka.fetch.queue.backoff.ms`` (source default 50, not
                             librdkafka's 1 s: the watermark consumer's queue fills between
                             triggers, and each full queue would stall its fetches 1 s)

===========================  ==============================================================
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from streams.exceptions import ConfigError

SCHEMA = "key binary, value binary, topic string, partition int, offset long, timestamp_ms long"
"""The ``squall-kafka`` source's row schema (Spark DDL; :mod:`streams.spark.source`). Here, not in the
source's module: Spark asks for it in a planning worker that needs nothing else of the reader."""

SOURCE_DEFAULTS = {"fetch.wait.max.ms": 50, "queued.max.messages.kbytes": 16384, "fetch.queue.backoff.ms": 50}
SINK_DEFAULTS = {"linger.ms": 20}


def _get(options: Mapping[str, str], key: str) -> str | None:
    # Spark hands Python data sources a case-insensitive dict; plain dicts (tests) are not.
    if key in options:
        return options[key]
    low = key.lower()
    for k, v in options.items():
        if k.lower() == low:
            return v
    return None


def bootstrap(options: Mapping[str, str], where: str) -> str:
    """``bootstrap.servers`` (or ``kafka.bootstrap.servers``). Raises ConfigError naming ``where`` when missing."""
    value = _get(options, "bootstrap.servers") or _get(options, "kafka.bootstrap.servers")
    if not value:
        raise ConfigError(f"[{where}] option bootstrap.servers is required")
    return value


def kafka_settings(options: Mapping[str, str], defaults: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``kafka.*`` options (prefix stripped) over ``defaults``, plus bootstrap.servers."""
    out: dict[str, Any] = dict(defaults)
    for k, v in options.items():
        if k.lower().startswith("kafka."):
            out[k[len("kafka.") :]] = v
    out["bootstrap.servers"] = bootstrap(options, where)
    return out


def text(options: Mapping[str, str], key: str, default: str | None = None) -> str | None:
    """Option ``key`` as text, or ``default``."""
    value = _get(options, key)
    return default if value is None or value == "" else value


def number(options: Mapping[str, str], key: str, default: float | None, where: str) -> float | None:
    """Option ``key`` as a number, or ``default``. Raises ConfigError naming ``where`` for a non-number."""
    value = _get(options, key)
    if value is None or value == "":
        return default
    try:
        return float(value)
    except ValueError:
        raise ConfigError(f"[{where}] option {key}={value!r} is not a number") from None


def topics(options: Mapping[str, str], where: str) -> list[str]:
    """The ``subscribe`` option's topics. Raises ConfigError naming ``where`` when there are none."""
    value = _get(options, "subscribe")
    names = [t.strip() for t in (value or "").split(",") if t.strip()]
    if not names:
        raise ConfigError(f"[{where}] option subscribe (comma-separated topics) is required")
    return names


def max_tasks(options: Mapping[str, str], where: str) -> int:
    """The ``maxTasks`` option (default: the cores). Raises ConfigError naming ``where`` below 1."""
    n = number(options, "maxTasks", float(os.cpu_count() or 1), where)
    assert n is not None
    if n < 1:
        raise ConfigError(f"[{where}] option maxTasks must be >= 1")
    return int(n)
