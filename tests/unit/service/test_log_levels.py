"""squall set_log_level and squall logs, without a broker: levels, their timed revert, the control record, the log reader."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from service.control.log_levels import LevelSetter, effective, parse_level
from service.control.record import TopologyRecord, set_log_levels
from service.exceptions import UsageError
from service.query.logs import last_started, read_log


def test_specs_parse_with_storms_level_names_and_bad_ones_are_one_line_errors() -> None:
    assert parse_level("ROOT=warn", 5.0) == ("ROOT", {"level": "WARN", "until": None})
    assert parse_level("squall.executor.bolt=TRACE:2.5", 5.0) == ("squall.executor.bolt", {"level": "TRACE", "until": 7.5})
    for bad in ("noequals", "x=LOUD", "x=DEBUG:soon", "x=DEBUG:-1", "=DEBUG"):
        with pytest.raises(UsageError, match=r"^\[set_log_level\] "):
            parse_level(bad, 0.0)


def test_a_level_applies_until_it_expires_and_the_logger_gets_its_own_level_back() -> None:
    name = "squall.test.levels"
    logging.getLogger(name).setLevel(logging.WARNING)
    levels = dict([parse_level(f"{name}=DEBUG:10", 100.0), parse_level("ROOT=INFO", 100.0)])
    setter = LevelSetter()
    root_before = logging.getLogger().level
    try:
        root_changed = ["logger ROOT set to INFO"] if root_before != logging.INFO else []
        assert setter.apply(effective(levels, 105.0)) == [f"logger {name} set to DEBUG", *root_changed]
        assert logging.getLogger(name).level == logging.DEBUG
        assert setter.apply(effective(levels, 105.5)) == []  # nothing to change
        assert setter.apply(effective(levels, 110.0)) == [f"logger {name} back to WARNING"]  # expired: its own level again
        assert logging.getLogger(name).level == logging.WARNING and logging.getLogger().level == logging.INFO
    finally:
        setter.apply({})
    assert logging.getLogger().level == root_before


def test_the_control_record_keeps_the_version_drops_expired_and_reset_levels() -> None:
    rec = TopologyRecord.new("wc", "src", "wc.py", {}, 0.0)
    one = set_log_levels(rec, dict([parse_level("a=DEBUG:5", 10.0), parse_level("b=INFO", 10.0)]), [], 10.0)
    assert one.version == rec.version and set(one.log_levels) == {"a", "b"}  # no worker is replanned
    two = set_log_levels(one, {}, ["b"], 20.0)  # a expired at 15, b reset
    assert two.log_levels == {}
    assert TopologyRecord.decode(one.encode()).log_levels == one.log_levels


def test_a_supervisor_serves_a_workers_log_from_an_offset_or_its_tail(tmp_path: Path) -> None:
    (tmp_path / "wc-w1.log").write_bytes(b"0123456789")
    assert read_log(tmp_path, "/logs/wc/1", 0) == (200, b"0123456789", 10)
    assert read_log(tmp_path, "/logs/wc/1", -4) == (200, b"6789", 10)
    assert read_log(tmp_path, "/logs/wc/1", 10) == (200, b"", 10)  # nothing new yet (squall logs -f)
    assert read_log(tmp_path, "/logs/wc/2", 0)[0] == 404
    assert read_log(tmp_path, "/logs/../etc/1", 0)[0] == 404  # only a topology name and a worker number
    events = [
        {"event": "started", "worker": 1, "supervisor": "s1", "http": "h:1"},
        {"event": "crashed", "worker": 1},
        {"event": "started", "worker": 1, "supervisor": "s2", "http": "h:2"},
        {"event": "started", "worker": 0, "supervisor": "s1"},  # from a supervisor that serves no logs
    ]
    assert {w: e["supervisor"] for w, e in last_started(events, None).items()} == {1: "s2"}
    assert last_started(events, 0) == {}
