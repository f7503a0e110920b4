"""docs/mcp.md and the README say what the server does: the client configurations are
command lines ``convstore`` accepts, and the stated limits are the code's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from convstore.cli.parser import build_parser
from convstore.mcp import _http, _server, _stdio, _tools, _views

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "docs" / "mcp.md", ROOT / "README.md"]


def _configurations() -> list[dict[str, object]]:
    found = []
    for page in PAGES:
        for block in re.findall(r"```json\n(.*?)```", page.read_text(encoding="utf-8"), re.DOTALL):
            if "mcpServers" in block:
                found.extend(json.loads(block)["mcpServers"].values())
    return found


def test_both_pages_show_client_configurations() -> None:
    configurations = _configurations()
    assert sum("command" in c for c in configurations) == 2
    assert any("url" in c for c in configurations)


@pytest.mark.parametrize("configuration", _configurations())
def test_each_configuration_is_a_command_line_convstore_accepts(
    configuration: dict[str, object],
) -> None:
    if "url" in configuration:
        assert str(configuration["url"]).endswith(_http.MCP_PATH)
        return
    assert configuration["command"] == "convstore"
    args = build_parser().parse_args([str(a) for a in configuration["args"]])  # type: ignore[attr-defined]
    assert args.command == "mcp"
    assert args.url.startswith("sqlite+aiosqlite:////")  # absolute: clients pick the cwd


def test_the_stated_limits_are_the_codes() -> None:
    text = " ".join((ROOT / "docs" / "mcp.md").read_text(encoding="utf-8").split())
    stated = [
        f"`limit` is 1 to {_tools.SEARCH_LIMIT_MAX}",
        f"`limit` 1 to {_tools.LIST_LIMIT_MAX}",
        f"(1 to {_tools.READ_LAST_MAX})",
        f"at most {_tools.MAX_IMAGES} images per call",
        f"each at most {_tools.MAX_IMAGE_BYTES // 2**20} MiB",
        f"together at most {_tools.MAX_IMAGES_TOTAL // 2**20} MiB",
        f"cut at {_views.RESULT_TEXT_IN_WINDOW:,} characters",
        f"its newest {_server.RESOURCE_LAST} messages",
        f"the newest {_server.RECENT_RESOURCES} conversations",
        f"a line over {_stdio.MAX_LINE_BYTES // 2**20} MiB",
        f"given {_http.SHUTDOWN_GRACE} seconds",
    ]
    missing = [phrase for phrase in stated if phrase not in text]
    assert not missing
