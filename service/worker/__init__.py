"""One worker process of one topology: Storm's ``daemon/worker/Worker``.

Run as ``python -m service.worker PLAN INDEX`` by a supervisor or by ``squall run``. It builds
its executors from the plan, serves their metrics, watches the control record (active, log
levels) and the claims on its tasks (it fences itself when another process takes them), and
drains on SIGTERM so that nothing is replayed.
"""
