"""The executors (Storm's ``executor/``).

The base, the bolt and spout executors, the collector implementations, routing, trees in
flight and the pending bound.

The top of ``streams``' data plane: imports every layer below it, never
:mod:`streams.transactional` (a transactional spout is just a :class:`~streams.model.spout.Spout`
to the spout executor).
"""
