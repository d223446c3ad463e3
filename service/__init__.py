"""Squall's service layer: the ``squall`` command line, its supervisors and workers (Storm's daemons).

Subpackages, bottom first (``tests/unit/test_layers.py`` holds the allowed edges between them):

- :mod:`service.exceptions` and :mod:`service.config`: the service's errors and settings;
- :mod:`service.process`: starting, watching and restarting worker processes;
- :mod:`service.brokers`: the brokers Squall starts or provisions (tansu, Apache Kafka, PostgreSQL, topics);
- :mod:`service.control`: the desired state of every topology (Storm's Nimbus and ZooKeeper);
- :mod:`service.worker`: one worker process (Storm's ``Worker``);
- :mod:`service.query`: what the read-only verbs read (status, errors, trace, dead letters, logs);
- :mod:`service.supervisor`: ``squall serve`` (Storm's ``Supervisor``, and with its peers its Nimbus and UI API);
- :mod:`service.run`: ``squall run`` (Storm's ``LocalCluster``);
- :mod:`service.cli`: the verbs (Storm's ``storm`` command).
"""
