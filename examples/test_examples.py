"""The examples, tested with Squall's test kit: no broker, simulated time.

Run them as a user would::

    pytest -p streams.testing examples/test_examples.py
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from examples import exclamation, flights_windows, rolling_top_words, wordcount, wordcount_stateful
from streams.testing import Faults, SimulatedTime, run_topology

LINES = ["The cat sat on the mat", "a dog barked", "the end"]


def test_wordcount_counts_every_word(squall_kit: Any) -> None:
    local = squall_kit(wordcount.topology())
    local.feed("lines", LINES)
    local.settle()
    result = local.result()
    assert result.output() == {"the": 3, "cat": 1, "sat": 1, "on": 1, "mat": 1, "a": 1, "dog": 1, "barked": 1, "end": 1}
    assert result.final_outcomes("lines") == Counter({"acked": 3})


def test_wordcount_replays_a_failed_line_and_a_lost_ack_times_out(squall_kit: Any, squall_time: SimulatedTime) -> None:
    faults = Faults().fail("count", where=lambda t: t[0] == "dog").drop_ack("split", where=lambda t: t[0] == "the end")
    local = squall_kit(wordcount.topology(), faults=faults, config={"squall.spout.tree.records": 1, "topology.message.timeout.secs": 10})
    local.feed("lines", LINES)
    local.run()  # no time passes: the count bolt acks on its 0.1 s tick, so nothing is acked yet
    assert local.result().input_outcomes("lines") == [[], ["failed"], []]
    local.advance(0.5)  # ticks: the counts are written and acked; the failed line was replayed
    assert local.result().input_outcomes("lines") == [["acked"], ["failed", "acked"], []]  # "the end" waits for its lost ack
    local.advance(10.0)  # the message timeout passes: the tree times out, and is replayed
    local.settle()
    assert local.result().input_outcomes("lines")[2] == ["timed_out", "acked"]
    assert 10.0 <= squall_time.now < 11.0


def test_stateful_wordcount_keeps_its_counts_in_state() -> None:
    result = run_topology(wordcount_stateful.topology(), {"lines": LINES})
    assert result.output()["the"] == 3


def test_rolling_top_words_emits_a_top_list_per_window() -> None:
    lines = ["alpha beta alpha"] * 500
    result = run_topology(rolling_top_words.topology(), {"lines": lines})
    assert result.output() == rolling_top_words.direct_windows(lines)


def test_flights_windows_count_late_flights_apart() -> None:
    header = "year,month,day,dep_time,sched_dep_time,dep_delay,arr_time,sched_arr_time,arr_delay,carrier,"
    header += "flight,tailnum,origin,dest,air_time,distance,hour,minute,time_hour"
    rows = [f"2013,1,1,{517 + i},{515 + i},2,830,819,11,UA,1545,N14228,EWR,IAH,227,1400,5,15,2013-01-01T10:00:00Z" for i in range(50)]
    lines = [header, *rows]
    result = run_topology(flights_windows.topology(), {"rows": lines})
    merged: Counter[str] = Counter()
    for out in result.outputs.values():  # a window's key can be in both outputs: its flights in time and its late ones
        merged.update({k.removeprefix("late "): v for k, v in out.items()})
    assert merged == flights_windows.direct_counts(lines)


def test_exclamation_writes_to_its_kafka_topic() -> None:
    result = run_topology(exclamation.topology(), {"lines": ["hi"]})
    assert [r.value() for r in result.sinks["squall.exclamation.exclaimed"]] == [b"hi!!!!!!"]


def test_wordcount_stream_counts_every_word() -> None:
    from examples import wordcount_stream

    result = run_topology(wordcount_stream.topology(), {"lines": LINES})
    assert result.output() == {"the": 3, "cat": 1, "sat": 1, "on": 1, "mat": 1, "a": 1, "dog": 1, "barked": 1, "end": 1}


def test_wordcount_trident_counts_every_word_exactly_once_despite_a_failed_batch() -> None:
    from examples import wordcount_trident

    faults = Faults().fail("persistent_aggregate", where=lambda t: t.get("word") == "the")
    result = run_topology(wordcount_trident.topology(), {"lines": LINES}, faults=faults, config={"squall.batch.records": 1})
    assert result.output() == {"the": 3, "cat": 1, "sat": 1, "on": 1, "mat": 1, "a": 1, "dog": 1, "barked": 1, "end": 1}


def test_flights_join_joins_flights_with_tables_and_weather() -> None:
    from examples import flights_join

    lines = [
        "airline,UA,United Air Lines Inc.",
        "airport,EWR,Newark Liberty Intl,40.6925,-74.1686,18,-5,A,America/New_York",
        "weather,EWR,2013,1,1,5,39.02,28.04,64.43,260,12.65858,NA,0,1011.9,10,2013-01-01T10:00:00Z",
        "flight,2013,1,1,517,515,2,830,819,11,UA,1545,N14228,EWR,IAH,227,1400,5,15,2013-01-01T10:00:00Z",
        "flight,2013,1,1,554,600,-6,812,837,-25,UA,1696,N39463,EWR,ORD,150,719,6,0,2013-01-01T11:00:00Z",  # no weather that hour
    ]
    result = run_topology(flights_join.topology(), {"records": lines})
    assert result.output() == {"United Air Lines Inc. | Newark Liberty Intl | dry": 1} == dict(flights_join.direct_counts(lines))
