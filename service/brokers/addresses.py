"""Where a broker Squall starts listens, and what it tells clients (``squall broker --listen/--advertise``).

A Kafka broker binds one address and advertises another in its metadata: clients bootstrap
anywhere, then connect to what the metadata says. Bound to 127.0.0.1 (the default), only this
host can use it; supervisors on other hosts need an address they route to, advertised.
"""

from __future__ import annotations

from service.exceptions import BrokerError

WILDCARDS = ("0.0.0.0", "::", "[::]")
"""Listen addresses that bind every interface: clients cannot be told to connect there."""


def listen_and_advertise(listen: str, advertise: str | None) -> tuple[str, str]:
    """``(listen, advertise)`` hosts for a broker's listener (``squall broker --listen/--advertise``).

    ``advertise`` (the host clients are told to connect to, in the broker's metadata)
    defaults to ``listen``; a wildcard ``listen`` needs one. Raises BrokerError (one line).

    >>> listen_and_advertise("127.0.0.1", None), listen_and_advertise("0.0.0.0", "10.1.0.5")
    (('127.0.0.1', '127.0.0.1'), ('0.0.0.0', '10.1.0.5'))
    >>> listen_and_advertise("0.0.0.0", None)
    Traceback (most recent call last):
    service.exceptions.BrokerError: [broker] --listen 0.0.0.0 binds every interface: give --advertise HOST, the address other hosts reach this one at
    """
    for flag, host in (("--listen", listen), ("--advertise", advertise)):
        if host is not None and host not in WILDCARDS and (not host or "/" in host or (":" in host and not host.startswith("["))):
            raise BrokerError(f"[broker] {flag} {host!r} is not a host name or address (the port is --port; an IPv6 address goes in brackets)")
    if advertise is None:
        if listen in WILDCARDS:
            raise BrokerError(f"[broker] --listen {listen} binds every interface: give --advertise HOST, the address other hosts reach this one at")
        advertise = listen
    if advertise in WILDCARDS:
        raise BrokerError(f"[broker] --advertise {advertise} is not an address a client can connect to")
    return listen, advertise
