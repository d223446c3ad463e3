"""Storm's JoinBolt: hash joins of several sources within a window, against a direct join (hypothesis)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streams import Count, KafkaSpout, TopologyBuilder
from streams.api.join_bolt import JoinBolt
from streams.testing import run_topology
from tests.unit.api.helpers import Csv

users = st.lists(st.tuples(st.sampled_from(["u1", "u2", "u3"]), st.sampled_from(["fr", "uk"])), max_size=6)
orders = st.lists(st.tuples(st.sampled_from(["u1", "u2", "u3", "u4"]), st.integers(1, 9)), max_size=10)
coupons = st.lists(st.tuples(st.sampled_from(["u1", "u2", "u5"]), st.sampled_from(["c1", "c2"])), max_size=5)


def topology(how: str) -> Any:
    b = TopologyBuilder()
    b.set_spout("orders", KafkaSpout(translator=Csv("user", "amount")))
    b.set_spout("users", KafkaSpout(translator=Csv("id", "country")))
    b.set_spout("coupons", KafkaSpout(translator=Csv("user", "coupon")))
    j = JoinBolt("orders", "user")
    j = j.join("users", "id", "orders") if how == "inner" else j.left_join("users", "id", "orders")
    # Storm's rule: a source joins on the one field it is grouped on; coupons.user = users.id
    j = j.left_join("coupons", "user", "users").select("orders.user, orders.amount, users.country, coupons.coupon")
    b.set_bolt("join", j.with_tumbling_window(Count(10_000)).with_idle_timeout(1.0)).global_grouping("orders").global_grouping("users").global_grouping(
        "coupons"
    )
    return b.create_topology("joins")


@settings(max_examples=30)
@given(users, orders, coupons, st.sampled_from(["inner", "left"]))
def test_a_three_way_join_equals_the_direct_join(us: list[tuple[str, str]], os: list[tuple[str, int]], cs: list[tuple[str, str]], how: str) -> None:
    inputs = {"orders": [f"{u},{a}" for u, a in os], "users": [f"{u},{c}" for u, c in us], "coupons": [f"{u},{x}" for u, x in cs]}
    result = run_topology(topology(how), inputs)
    got = Counter(result.values("join"))
    direct: Counter[tuple[Any, ...]] = Counter()
    for u, a in os:
        matches: list[tuple[str | None, str | None]] = [(uid, c) for uid, c in us if uid == u]
        if not matches and how == "left":
            matches = [(None, None)]
        for uid, c in matches:
            found: list[str | None] = [x for cu, x in cs if cu == uid] if uid is not None else []
            for x in found or [None]:
                direct[(u, str(a), c, x)] += 1
    assert got == direct


def test_select_names_the_output_fields_and_the_output_stream() -> None:
    j = JoinBolt("a", "k").join("b", "k", "a").select("a:k, b.v").with_output_stream("joined")
    assert j.output_fields == ["k", "v"] and j.output_stream == "joined"
