"""Several processes open one new SQLite state file at once and commit at once: none sees "database is locked".

Seen in CI: the four committers of the exactly-once word count connected to a new file
together, and one failed "cannot open ...: database is locked" (its batch replayed). Each
CREATE of the schema, in autocommit, read and then upgraded to a write, and an upgrade that
meets another process's commit fails at once instead of waiting; the first switch to WAL
does the same. Before the fix this failed in 6 of 60 rounds of 8 processes.

The processes are spawned, never forked: a fork of a test runner with threads can inherit a
held lock and hang (it did, under xdist).
"""

from __future__ import annotations

import multiprocessing as mp
import time
from pathlib import Path

from streams.state.sqlite import SqliteBackend


def open_and_commit(path: str, writer: int, start_at: float) -> str | None:
    backend = SqliteBackend(f"sqlite:///{path}", path)
    time.sleep(max(0.0, start_at - time.time()))  # all at once: connect (WAL, schema), then write
    try:
        for txid in (1, 2, 3):
            with backend.transaction("counts", f"w{writer}") as tx:
                tx.write(txid, {f"k{writer}-{j}": j for j in range(200)})
                tx.commit(txid, 200, 0)
    except Exception as exc:
        return repr(exc)
    return None


def test_processes_opening_a_new_file_together_wait_for_each_other(tmp_path: Path) -> None:
    failures: list[str] = []
    with mp.get_context("spawn").Pool(8) as pool:
        pool.starmap(time.sleep, [(0,)] * 8)  # every worker started and imported
        for round_ in range(15):
            path = str(tmp_path / f"state{round_}.db")
            start_at = time.time() + 0.2
            failures += [f for f in pool.starmap(open_and_commit, [(path, w, start_at) for w in range(8)]) if f]
            backend = SqliteBackend(f"sqlite:///{path}", path)
            assert backend.last_txid("counts", "w7") == 3  # every writer committed all three
    assert not failures, failures[:3]
