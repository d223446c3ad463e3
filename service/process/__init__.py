"""Worker processes: how they are started, how a hung one is seen, and when a crashed one is restarted.

Storm's counterpart is the supervisor's container code (``daemon/supervisor/BasicContainer``,
``LocalContainer`` and the worker heartbeats it reads). Both runners of workers use it: a
supervisor (:mod:`service.supervisor`) and ``squall run`` (:mod:`service.run`). Pure policy
(:mod:`~service.process.restarts`, the checks of :mod:`~service.process.hang`) sits beside the
few OS calls that start a process and tie it to its parent.
"""
