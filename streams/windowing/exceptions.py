"""Errors of :mod:`streams.windowing`."""

from __future__ import annotations

from streams.exceptions import TopologyError


class WindowSpecError(TopologyError):
    """A window's length, interval or event-time options are invalid (the bolt names its component)."""
