"""Acker errors. All derive from :class:`streams.exceptions.SquallError`."""

from __future__ import annotations

from streams.exceptions import DecodeError, FatalError, SquallError


class AckerError(SquallError):
    """Base for acker errors."""


class RestoreError(FatalError):
    """The acker table could not be restored from its changelog (acker id, partition in message)."""


__all__ = ["AckerError", "DecodeError", "RestoreError", "SquallError"]
