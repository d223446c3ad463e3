"""``python -m service.cli``: the ``squall`` command (:func:`service.cli.main.main`)."""

from service.cli.main import main

main()
