"""Hypothesis settings for the unit lane: no per-example deadline.

Speed is measured in ``bench/``, never in a timed test. Under ``python -m tests`` the unit
lane is a process of its own, so its first property test pays hypothesis's first imports
(256 ms against the default 200 ms deadline, seen once on CI's two cores): a deadline there
tests the machine, not the code.
"""

from hypothesis import settings

settings.register_profile("squall", deadline=None)
settings.load_profile("squall")
