"""``python -m bench``: every verb's ``--help`` prints its usage (argparse formats help text with ``%``)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from bench.__main__ import main

VERBS = ["acker", "acker-cpu", "ack-cpu", "kit", "all", "spark", "trace", "pairs", "idle", "state", "trace-cpu", "ops"]


@pytest.mark.parametrize("verb", [None, *VERBS])
def test_help_prints_the_usage_and_exits_0(verb: str | None, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--help"] if verb is None else [verb, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m bench")
    if verb is not None:
        assert verb in out.splitlines()[0]


def test_help_leaves_no_work_directory_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    for verb in VERBS:
        with pytest.raises(SystemExit):
            main([verb, "--help"])
    assert list(tmp_path.iterdir()) == []
