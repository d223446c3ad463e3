"""Exactly once (seed 003, Storm's transactional topologies and Trident).

The wiring a transactional spout adds to a topology, the coordinated bolt, the batch
tracker, the batch coordinator and its store, the range reader, and the transactional and
opaque spouts.

Sits on :mod:`streams.kafka` and :mod:`streams.model`; never imports
:mod:`streams.runtime`, and the runtime never imports it.
"""
