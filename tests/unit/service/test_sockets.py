"""A fenced worker's exit resets its connections (service.worker.sockets): nothing it sent during a cut reaches the broker later."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import os, socket, sys
    from service.worker.sockets import abort_tcp_connections
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.sendall(b"hello")
    print(abort_tcp_connections(), flush=True)
    os._exit(4)
    """
)


def exit_seen_by_peer(abort: bool) -> bytes | str:
    """What the other end of a child's connection reads after the child exits (its data, then b"" for a close, or "reset")."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        code = CHILD if abort else CHILD.replace("print(abort_tcp_connections(), flush=True)", "print(0, flush=True)")
        child = subprocess.run([sys.executable, "-c", code, str(server.getsockname()[1])], capture_output=True, text=True, timeout=30)
        assert child.returncode == 4, child.stderr
        conn, _ = server.accept()
        with conn:
            got = b""
            try:
                while chunk := conn.recv(100):
                    got += chunk
            except ConnectionResetError:
                return "reset"
            return got


def test_an_aborted_exit_resets_the_connection_where_a_plain_exit_closes_it() -> None:
    assert exit_seen_by_peer(abort=False) == b"hello"  # a plain exit: the kernel delivers what was sent, then closes
    assert exit_seen_by_peer(abort=True) == "reset"  # unsent or unread data is dropped: the peer sees a reset
