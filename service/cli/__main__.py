"""``python -m service.cli``: the ``squall`` command (:func:`service.cli.fast.main`: the reading verbs through the local supervisor, else typer)."""

from service.cli.fast import main

main()
