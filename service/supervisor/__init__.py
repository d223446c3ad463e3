"""``squall serve``: Storm's ``daemon/supervisor/Supervisor``, and, together with the other supervisors, its Nimbus and UI API.

Each round a supervisor reads the control topic, decides which workers its slots should run
(:mod:`~service.supervisor.reconcile`, pure), starts, stops and restarts them, writes their
events, and serves ``/healthz``, ``/readyz``, ``/metrics``, worker logs and the Storm UI's REST
API (:mod:`~service.supervisor.storm_api`).
"""
