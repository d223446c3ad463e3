"""The servers Squall starts or provisions: the embedded broker (tansu), Apache Kafka, PostgreSQL, and a topology's topics.

Storm has no counterpart (it starts ZooKeeper in ``LocalCluster`` and leaves the rest to the
operator). The launchers serve ``squall run``, ``squall broker``, the tests and ``bench/``;
:mod:`~service.brokers.admin` is the only place Squall creates, reads or checks topics.
"""
