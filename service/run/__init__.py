"""``squall run``: one topology end to end on real input, on this machine (Storm's ``LocalCluster``).

It starts the embedded broker (unless a Kafka is named), creates the topics, starts the worker
processes, produces the input (the Shakespeare corpus, a file, or the flights), shows progress
until every source record is acked, and writes the result.
"""
