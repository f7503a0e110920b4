"""The example in docs/integrations/pydantic-ai.md runs, and its image never enters the database."""

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

require("pydantic_ai")


async def test_documented_example_renders_the_tool_image_for_anthropic(tmp_path: Path) -> None:
    example = doc_example("pydantic-ai")
    main = cast("Callable[[str], Awaitable[dict[str, Any]]]", example["main"])
    payload = await main(str(tmp_path))
    png = cast("bytes", example["PNG"])

    messages = payload["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    call = messages[1]["content"][0]
    assert call["type"] == "tool_use" and call["name"] == "chart"
    result = messages[2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == call["id"]
    images = [block for block in result["content"] if block["type"] == "image"]
    assert images[0]["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": base64.b64encode(png).decode(),
    }
    assert messages[3]["content"][0]["text"] == "Here is the latency chart."

    raw = sqlite_file_bytes(f"sqlite+aiosqlite:///{tmp_path / 'chat.db'}")
    assert raw and png not in raw and base64.b64encode(png) not in raw
