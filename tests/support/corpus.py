"""Where the accepted-request corpus lives (vendored from the project's shared material).

71 request bodies provider APIs answered with HTTP 200, from pydantic/pydantic-ai's public
test recordings (MIT License); see ``tests/corpus/README.md`` for provenance and fields.

`corpus_guard` is the one rule for tests that need it: they skip exactly when the corpus
directory is missing, and never under ``CI=true``; a corpus that is there but holds no record
for an API is an error at collection, not a skip.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Final

import pytest

__all__ = ["CORPUS_DIR", "corpus_guard", "corpus_records"]

CORPUS_DIR: Final = Path(__file__).resolve().parents[1] / "corpus" / "accepted"


def corpus_records(api: str) -> list[dict[str, Any]]:
    """The records for ``api``, sorted by file name, each with its file's stem as ``name``."""
    records = []
    for path in sorted(CORPUS_DIR.glob("*.json")) if CORPUS_DIR.is_dir() else []:
        record = json.loads(path.read_text())
        if record["api"] == api:
            records.append({**record, "name": path.stem})
    return records


def corpus_guard(records: list[Any], api: str) -> pytest.MarkDecorator:
    """A mark for the tests that read ``records``: none when there are some, else a skip."""
    if records:
        return pytest.mark.corpus
    if CORPUS_DIR.is_dir():
        raise RuntimeError(f"the corpus at {CORPUS_DIR} holds no {api} records")
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        raise RuntimeError(f"corpus not found at {CORPUS_DIR}: under CI=true its tests must run")
    return pytest.mark.skip(reason=f"corpus not found at {CORPUS_DIR}")
