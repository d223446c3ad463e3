"""The UI's errors (:class:`~streams.exceptions.SquallError` underneath, as everywhere in Squall)."""

from __future__ import annotations

from streams.exceptions import SquallError


class ActionRefused(SquallError):
    """An action the UI will not take: no admin token, a wrong one, no session, or a failed CSRF check (HTTP 403)."""


class PageNotFound(SquallError):
    """A page, topology, component, tree or dead letter that does not exist (HTTP 404)."""
