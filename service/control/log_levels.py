"""``squall set_log_level``: change loggers' levels in a running topology's workers, with Storm's timed revert.

``-l logger=LEVEL[:SECONDS]`` (Storm's ``storm set_log_level -l``): ``ROOT`` is the root logger;
levels are Python's (``DEBUG``, ``INFO``, ``WARNING``, ``ERROR``, ``CRITICAL``) or Storm's
(``TRACE``, ``ALL``, ``WARN``, ``FATAL``, ``OFF``); after SECONDS the logger goes back to the
level it had. The levels live in the topology's control record (``log_levels``, so a worker
that starts later gets them too); each worker's control watcher applies them
(:class:`LevelSetter`) and reverts an expired one within a fraction of a second.
"""

from __future__ import annotations

import logging
from typing import Any

from service.exceptions import UsageError

LEVELS = {
    "ALL": logging.NOTSET + 1,
    "TRACE": logging.DEBUG,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "WARNING": logging.WARNING,
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
    "CRITICAL": logging.CRITICAL,
    "OFF": logging.CRITICAL + 10,
}
"""Level names, Python's and Storm's (log4j's), as numbers."""

ROOT = "ROOT"


def parse_level(spec: str, now: float) -> tuple[str, dict[str, Any]]:
    """``logger=LEVEL[:SECONDS]`` as ``(logger, {"level": LEVEL, "until": wall seconds or None})``. Raises UsageError.

    >>> parse_level("squall.executor.bolt=debug:30", 100.0)
    ('squall.executor.bolt', {'level': 'DEBUG', 'until': 130.0})
    """
    logger, sep, rest = spec.partition("=")
    level, _, secs = rest.partition(":")
    level = level.strip().upper()
    if not sep or not logger.strip() or level not in LEVELS:
        raise UsageError(f"[set_log_level] {spec!r}: expected LOGGER=LEVEL[:SECONDS], LEVEL one of {', '.join(LEVELS)}")
    until = None
    if secs:
        try:
            seconds = float(secs)
        except ValueError:
            raise UsageError(f"[set_log_level] {spec!r}: the timeout must be seconds, got {secs!r}") from None
        if seconds <= 0:
            raise UsageError(f"[set_log_level] {spec!r}: the timeout must be > 0 seconds")
        until = now + seconds
    return logger.strip(), {"level": level, "until": until}


def effective(log_levels: dict[str, dict[str, Any]], now: float) -> dict[str, int]:
    """The levels in force at ``now``: ``logger -> level number`` (expired ones left out)."""
    return {name: LEVELS[v["level"]] for name, v in log_levels.items() if v.get("until") is None or now < v["until"]}


class LevelSetter:
    """Sets loggers to the desired levels, and puts back the level a logger had before once it is no longer desired.

    Not thread-safe: one control watcher calls it.
    """

    def __init__(self) -> None:
        self.original: dict[str, int] = {}
        """Loggers this setter changed, and the level each had before."""

    @staticmethod
    def _logger(name: str) -> logging.Logger:
        return logging.getLogger() if name == ROOT else logging.getLogger(name)

    def apply(self, desired: dict[str, int]) -> list[str]:
        """Make ``desired`` the loggers' levels; returns what changed, as log lines."""
        changed = []
        for name, level in desired.items():
            lg = self._logger(name)
            if name not in self.original:
                self.original[name] = lg.level
            if lg.level != level:
                lg.setLevel(level)
                changed.append(f"logger {name} set to {logging.getLevelName(level)}")
        for name in [n for n in self.original if n not in desired]:
            level = self.original.pop(name)
            self._logger(name).setLevel(level)
            changed.append(f"logger {name} back to {logging.getLevelName(level)}")
        return changed
