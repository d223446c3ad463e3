"""What a topology is made of, with no I/O: tuples, components, collector protocols, context, groupings, batches, the builder and the validated spec.

Storm's ``task/`` API side: users program against these names (re-exported by
:mod:`streams`); the executors that run them live in :mod:`streams.runtime`. This layer
imports only :mod:`streams.wire`, :mod:`streams.state` and the bottom modules.
"""
