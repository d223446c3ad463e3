"""Aborting a process's TCP connections as it exits, so nothing it left in the kernel reaches a broker later.

A worker fenced after a cut (:mod:`service.worker.claim_watch`) exits at once. Its requests sent
during the cut (produce batches, offset commits) still sit in its sockets' kernel send
buffers, and an ordinary close keeps sending them: TCP retransmits with a backoff that grows
to minutes, so they reach the broker long after the worker is gone (seen on the embedded
broker: an offset commit from before a 40 s cut landed 25 s after its worker was fenced, and
moved a count task's input offset 45,000 records back; its tuples arrived 15 s after it was
gone). With ``SO_LINGER`` set to 0 the kernel drops them and resets the connection instead.

Linux only (it reads ``/proc/self/fd``); elsewhere it does nothing.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct

_ABORT = struct.pack("ii", 1, 0)
"""``struct linger {l_onoff = 1, l_linger = 0}``: close() resets the connection and drops unsent data."""


def abort_tcp_connections() -> int:
    """Set ``SO_LINGER`` 0 on every TCP socket of this process, so its exit resets them; returns how many.

    The descriptors stay open (each is duplicated to set the option, and the duplicate closed).
    """
    n = 0
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return 0
    for fd in fds:
        with contextlib.suppress(OSError, ValueError):
            dup = os.dup(fd)
            try:
                sock = socket.socket(fileno=dup)
            except OSError:
                os.close(dup)
                continue
            with sock:
                if sock.type == socket.SOCK_STREAM and sock.family in (socket.AF_INET, socket.AF_INET6):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _ABORT)
                    n += 1
    return n
