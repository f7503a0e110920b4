"""README.md's Python blocks run as written, twice (they write), in a fresh directory.

Each block is a whole script: it defines what it uses and runs against the embedded default
(``./convstore.db``, ``./convstore-blobs``). The first needs a ``screenshot.png`` beside it, which
the test puts there (the demo's PNG).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from convstore.cli.demo import _png

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)


def test_the_readme_has_its_examples() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_a_readme_block_runs_as_written_twice(index: int, tmp_path: Path) -> None:
    (tmp_path / "screenshot.png").write_bytes(_png())
    outputs = []
    for _ in range(2):
        result = subprocess.run(
            [sys.executable, "-c", BLOCKS[index]],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout)
    if "ContentOutput" in BLOCKS[index]:
        assert outputs[0].split() == ["complete", "ContentOutput", "['contents']", "user"]
    else:
        assert outputs[0].split() == ["Nice.", "True", "True", "True"]
    assert outputs[0] == outputs[1]
