"""``python -m service.worker PLAN INDEX``: one worker process (:func:`service.worker.process.main`)."""

import sys

from service.worker.process import main

sys.exit(main())
