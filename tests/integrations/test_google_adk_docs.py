"""The example in docs/integrations/google-adk.md runs, and its image never enters the database."""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

from tests.integrations.pydantic_ai_google_adk_support import (
    doc_example,
    require,
    sqlite_file_bytes,
)

require("google.adk")


async def test_documented_example_renders_the_tool_image_for_responses(tmp_path: Path) -> None:
    example = doc_example("google-adk")
    main = cast("Callable[[str], Awaitable[dict[str, Any]]]", example["main"])
    payload = await main(str(tmp_path))
    png = cast("bytes", example["PNG"])

    items = payload["input"]
    kinds = [item.get("type", item.get("role")) for item in items]
    assert "function_call" in kinds and "function_call_output" in kinds
    call = next(item for item in items if item.get("type") == "function_call")
    output = next(item for item in items if item.get("type") == "function_call_output")
    assert call["name"] == "chart" and output["call_id"] == call["call_id"]
    images = [part for part in output["output"] if part.get("type") == "input_image"]
    assert images and base64.b64encode(png).decode() in images[0]["image_url"]

    raw = sqlite_file_bytes(f"sqlite+aiosqlite:///{tmp_path / 'adk.db'}")
    urlsafe = base64.urlsafe_b64encode(png)
    assert raw and png not in raw and base64.b64encode(png) not in raw and urlsafe not in raw
