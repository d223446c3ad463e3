"""Integration fixtures: one real broker per session, fresh topics and groups per test.

Broker choice: ``SQUALL_TEST_BOOTSTRAP`` if set; else testcontainers Kafka when a Docker
engine answers; else the embedded tansu broker.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.broker import EmbeddedBroker
from service.config import ServiceSettings
from service.corpus import read_lines, shakespeare_texts

CACHE = Path(os.environ.get("SQUALL_DATA_DIR", Path.home() / ".cache" / "squall"))
TOPOLOGIES = Path(__file__).parent / "topologies"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _docker_ok() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True).returncode == 0


@pytest.fixture(scope="session")
def bootstrap() -> Iterator[str]:
    if os.environ.get("SQUALL_TEST_BOOTSTRAP"):
        yield os.environ["SQUALL_TEST_BOOTSTRAP"]
    elif _docker_ok():
        from testcontainers.kafka import KafkaContainer

        with KafkaContainer() as kafka:
            yield kafka.get_bootstrap_server()
    else:
        with EmbeddedBroker() as broker:
            yield broker.bootstrap


@pytest.fixture
def settings(bootstrap: str, tmp_path: Path) -> ServiceSettings:
    return ServiceSettings(bootstrap_servers=bootstrap, data_dir=tmp_path, log_level="INFO")


@pytest.fixture(scope="session")
def corpus() -> Path:
    return shakespeare_texts(CACHE)


def corpus_slice(corpus: Path, dest: Path, lines: int) -> Path:
    """The first ``lines`` non-blank lines of the corpus, as one file."""
    out = []
    for line in read_lines(corpus):
        out.append(line)
        if len(out) >= lines:
            break
    dest.write_bytes(b"\n".join(out) + b"\n")
    return dest


WORD = re.compile(r"[a-z']+")


def direct_count(path: Path) -> Counter[str]:
    """The expected word count: the example's regex over the same bytes."""
    c: Counter[str] = Counter()
    for line in read_lines(path):
        c.update(WORD.findall(line.decode("utf-8", "replace").lower()))
    return c
