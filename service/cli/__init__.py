"""The ``squall`` command line (typer): Storm's ``storm`` command and its verbs.

:mod:`~service.cli.app` holds what every verb shares (one-line user errors, ``--verbose``,
the settings); :mod:`~service.cli.main` the lifecycle verbs (run, serve, broker, submit, list,
kill, activate, deactivate, rebalance, status); :mod:`~service.cli.ops` the diagnosis verbs.
"""
