"""The example in docs/integrations/langgraph.md runs and renders its thread for Anthropic."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

from tests.integrations.pydantic_ai_google_adk_support import doc_example, require

require("langgraph")


async def test_documented_example_renders_the_thread(tmp_path: Path) -> None:
    main = cast("Callable[[str], Awaitable[dict[str, Any]]]", doc_example("langgraph")["main"])
    payload = await main(str(tmp_path))
    texts = [m["content"][0]["text"] for m in payload["messages"]]
    assert texts == ["hello", "You said: hello", "and again", "You said: and again"]
