"""The spout's feed pauses fetching with hysteresis (streams.source_feed.should_pause)."""

from hypothesis import given
from hypothesis import strategies as st

from streams.source_feed import PAUSE_ABOVE_BATCHES, RESUME_BELOW_BATCHES, should_pause


def test_a_buffer_hovering_at_the_pause_mark_pauses_once() -> None:
    batch = 500
    mark = PAUSE_ABOVE_BATCHES * batch
    paused, toggles = False, 0
    for buffered in [mark + 10, mark - 10] * 50:  # a spout held back by max.spout.pending
        now = should_pause(paused, buffered, batch)
        toggles += now != paused
        paused = now
    assert toggles == 1 and paused


@given(st.lists(st.integers(0, 30_000), max_size=200), st.integers(1, 1000))
def test_paused_iff_above_the_mark_or_not_yet_below_the_resume_mark(levels: list[int], batch: int) -> None:
    paused = False
    for buffered in levels:
        was = paused
        paused = should_pause(paused, buffered, batch)
        if buffered > PAUSE_ABOVE_BATCHES * batch:
            assert paused
        elif buffered <= RESUME_BELOW_BATCHES * batch:
            assert not paused
        else:
            assert paused == was  # between the marks nothing changes
