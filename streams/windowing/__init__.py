"""Windows over a stream of tuples (Storm's docs/Windowing.md): pure logic, fed by the windowed bolt (:mod:`streams.model.windowed`)."""

from streams.windowing.engine import Firing, WindowEngine
from streams.windowing.spec import Count, Duration, WindowSpec

__all__ = ["Count", "Duration", "Firing", "WindowEngine", "WindowSpec"]
