"""SQLite state and several supervisors (issue 25): a worker whose stateful components keep
state in a file on one machine is refused, with a message naming them, once another
supervisor serves the topology; PostgreSQL and kafka:// state, or a shared file, start."""

from __future__ import annotations

import pytest

from examples.wordcount_exactly_once import topology as exactly_once
from examples.wordcount_stateful import topology as stateful
from service.supervisor.state_placement import local_state_components, refusal
from streams.config import TopologyConfig

SQLITE = "sqlite:///data/state/wc.db"


def conf(**keys: object) -> TopologyConfig:
    return TopologyConfig.model_validate({k.replace("_", "."): v for k, v in keys.items()})


def test_stateful_bolts_and_committers_on_sqlite_are_local() -> None:
    assert local_state_components(stateful(), TopologyConfig.model_validate({"squall.state.url": SQLITE})) == {"count": SQLITE}
    t = exactly_once()
    committers = {c.id for c in t.components.values() if c.committer}
    assert committers and set(local_state_components(t, TopologyConfig.model_validate({"squall.state.url": SQLITE}))) == committers


@pytest.mark.parametrize("url", ["postgresql://u@db/squall", "kafka://"])
def test_state_that_follows_a_task_is_not_local(url: str) -> None:
    assert local_state_components(stateful(), TopologyConfig.model_validate({"squall.state.url": url})) == {}


def test_a_component_level_url_and_the_shared_flag_count() -> None:
    t = stateful()
    t.components["count"].conf["squall.state.url"] = "kafka://"
    assert local_state_components(t, TopologyConfig.model_validate({"squall.state.url": SQLITE})) == {}
    shared = TopologyConfig.model_validate({"squall.state.url": SQLITE, "squall.state.sqlite.shared": True})
    assert local_state_components(stateful(), shared) == {}


def test_a_worker_is_refused_only_with_other_supervisors_and_local_state_in_it() -> None:
    local = {"count": SQLITE}
    why = refusal("wc", 2, ["lines", "count", "count"], local, alone=False)
    assert why is not None and why.startswith("[wc] worker w2 not started: [count] keeps its state in sqlite:///data/state/wc.db")
    assert "postgresql://" in why and "squall.state.sqlite.shared=true" in why
    assert refusal("wc", 2, ["lines", "count"], local, alone=True) is None
    assert refusal("wc", 1, ["lines", "split"], local, alone=False) is None
