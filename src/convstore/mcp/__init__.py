"""``convstore mcp``: past conversations for any MCP client, read-only and tenant-confined.

``create_server(store, tenant=None)`` returns the server object (the official ``mcp`` SDK's
``MCPServer``) with four tools, ``search_conversations``, ``list_conversations``,
``read_conversation`` and ``get_tool_call``, and the resource template
``convstore://conversations/{id}`` (docs/mcp.md describes each result). It needs the ``mcp``
extra: ``pip install 'convstore[mcp]'``.

Modules: ``_server`` (the server, tools and resources), ``_tools`` (the tools' bodies and limits),
``_views`` (stored models as result JSON and Markdown), ``_results`` (the result shapes),
``_checks`` (refusing bad calls before they run), ``_stdio`` and ``_http`` (the transports of
``convstore mcp``), ``_compat`` (the one SDK internal used).

Invariants: it uses only the public store API (like the inspector) and never writes; the tenant
is fixed when the server is made, and another tenant's ids answer exactly as missing ones; a
caller's mistake is a tool error saying ``refused: <why>``, never a dropped session.
"""

from __future__ import annotations

from convstore.errors import MissingDependencyError

try:
    import mcp  # noqa: F401
    import mcp_types  # noqa: F401
except ImportError as _missing:
    raise MissingDependencyError(__name__, _missing.name or "mcp", "mcp") from _missing

from convstore.mcp._server import create_server

__all__ = ["create_server"]
