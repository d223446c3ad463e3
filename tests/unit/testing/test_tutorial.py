"""docs/testing.md's examples (and the README's) are test files: each python block runs, with the kit's plugin, and passes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def test_every_example_in_the_tutorial_passes(tmp_path: Path) -> None:
    blocks = BLOCK.findall((ROOT / "docs" / "testing.md").read_text())
    assert len(blocks) >= 6
    readme = (ROOT / "README.md").read_text()
    blocks += BLOCK.findall(readme[readme.index("## Testing your topology") : readme.index("## Storm users")])  # the README's example too
    for i, code in enumerate(blocks):
        (tmp_path / f"test_tutorial_{i}.py").write_text(code)
    tests = sum(len(re.findall(r"^def test_", code, re.M)) for code in blocks)
    got = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "streams.testing", "--rootdir", str(tmp_path), str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert got.returncode == 0, got.stdout[-3000:]
    assert f"{tests} passed" in got.stdout
