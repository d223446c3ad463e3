"""squall monitor's rates, without a broker."""

from __future__ import annotations

from service.query.monitor import rate_lines, totals


class Board:
    def __init__(self, values: dict[tuple[str, str], float]) -> None:
        self.values = values

    def total(self, kind: str, counter: str, component: str | None = None) -> float:
        return self.values.get((str(component), counter), 0.0)


def test_rates_are_the_totals_differences_per_second_for_each_component() -> None:
    kinds = {"lines": "spout", "split": "bolt"}
    before = totals(Board({("lines", "emitted"): 100, ("split", "executed"): 90}), kinds)
    after = totals(Board({("lines", "emitted"): 300, ("split", "executed"): 490, ("split", "failed"): 4}), kinds)
    lines, split = rate_lines(before, after, 2.0, "12:00:00")
    assert lines.startswith("12:00:00  lines ") and "emitted 100.0/s" in lines
    assert "executed 200.0/s" in split and "failed 2.0/s" in split and "acked 0.0/s" in split
    assert list(totals(Board({}), kinds, "split")) == ["split"]
