"""A topology's dependencies shipped with it (issue 51): bundled at submit, kept in Kafka, installed per supervisor.

:mod:`service.deps.bundle` resolves and packs them on the submitting machine;
:mod:`service.deps.store` keeps bundles on ``<namespace>.__artifacts``;
:mod:`service.deps.envs` installs one into a virtualenv per bundle, offline.
"""
