"""Where the accepted-request corpus lives (vendored from the project's shared material).

71 request bodies provider APIs answered with HTTP 200, from pydantic/pydantic-ai's public
test recordings (MIT License); see ``tests/corpus/README.md`` for provenance and fields.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

__all__ = ["CORPUS_DIR"]

CORPUS_DIR: Final = Path(__file__).resolve().parents[1] / "corpus" / "accepted"
