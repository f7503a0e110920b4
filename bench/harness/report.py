"""Markdown tables and JSON results, written the same way by every benchmark.

Invariants: a missing figure is shown as ``n/a`` (never as zero); a JSON result is written
whole or not at all (a temporary file renamed over the target).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table; the first column left-aligned, the others right-aligned."""
    align = ["---", *("---:" for _ in headers[1:])]
    lines = [f"| {' | '.join(headers)} |", f"|{'|'.join(align)}|"]
    lines += [f"| {' | '.join('n/a' if c is None else str(c) for c in row)} |" for row in rows]
    return "\n".join(lines)


def write_json(path: Path | str, data: Any) -> None:
    """Write ``data`` to ``path`` as indented JSON."""
    target = Path(path)
    partial = target.with_name(f".{target.name}.partial")
    partial.write_text(json.dumps(data, indent=1))
    os.replace(partial, target)
