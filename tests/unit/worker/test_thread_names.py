"""Executor threads carry their names at the OS level (service/worker/thread_names.py): ``top -H`` shows ``count-1``."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from service.worker.thread_names import os_named, set_os_thread_name

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the OS thread name is Linux's prctl(PR_SET_NAME)")


def _comm_of_thread(target_name: str, name: str) -> tuple[str, str]:
    seen: dict[str, str] = {}

    def body() -> None:
        seen["comm"] = Path(f"/proc/self/task/{threading.get_native_id()}/comm").read_text().strip()

    t = threading.Thread(target=os_named(body, name), name=target_name)
    t.start()
    t.join()
    return seen["comm"], Path(f"/proc/self/task/{threading.get_native_id()}/comm").read_text().strip()


def test_the_thread_gets_its_name_and_the_caller_keeps_its_own() -> None:
    comm, mine = _comm_of_thread("count-1", "count-1")
    assert comm == "count-1"
    assert mine != "count-1"


def test_a_long_name_is_cut_to_15_bytes() -> None:
    comm, _ = _comm_of_thread("x", "a-very-long-component-name-7")
    assert comm == "a-very-long-com"


def test_setting_the_name_reports_success() -> None:
    done: list[bool] = []
    t = threading.Thread(target=lambda: done.append(set_os_thread_name("split-0")))
    t.start()
    t.join()
    assert done == [True]
