"""What the workers of a failed test's topologies logged above INFO, for the test's failure report.

A worker process logs to ``<data_dir>/runs/<topology>/worker-<i>.log`` under ``squall run``
(``LocalCluster.log_path``) and to ``<home>/logs/<topology>-w<i>.log`` under a supervisor
(``service.query.logs.log_file``). pytest shows a test's own output and log lines, not those
files, so a test that failed on CI said nothing of what its workers saw (a hung executor's
stack, a flush waiting for the broker).
:func:`worker_warnings` picks their WARNING, ERROR and CRITICAL lines, with the traceback or
stack lines that follow one, and ``conftest.py`` adds them to the report of a failed test whose
``tmp_path`` holds such files.
"""

from __future__ import annotations

import re
from pathlib import Path

_RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ w\d+ (?P<level>[A-Z]+) ")
"""The start of a worker's log record (service.worker.process's format): time, worker, level."""

_LOUD = ("WARNING", "ERROR", "CRITICAL")

_WORKER_LOG = re.compile(r"^(worker-\d+|.+-w\d+)\.log$")
"""A worker's log file name, either runner's."""


def worker_warnings(root: Path, most: int = 200) -> list[str]:
    """The WARNING-and-above records of every worker log under ``root``, each prefixed with its file's directory and name.

    A record's continuation lines (a traceback, a stack) come with it. At most ``most`` lines:
    the last ones, where a failure usually is. Empty when ``root`` holds no worker log.
    """
    out: list[str] = []
    for path in sorted(p for p in root.rglob("*.log") if _WORKER_LOG.match(p.name)):
        where = f"{path.parent.name}/{path.name}"
        loud = False
        for line in path.read_text(errors="replace").splitlines():
            record = _RECORD.match(line)
            if record is not None:
                loud = record["level"] in _LOUD
            if loud:
                out.append(f"{where}: {line}")
    return out[-most:]
