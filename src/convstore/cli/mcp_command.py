"""``convstore mcp``: the MCP server (`convstore.mcp`) over stdio or Streamable HTTP.

Invariants:

- stdio (the default) writes nothing but protocol messages to stdout; everything else goes to
  stderr. A desktop client starts it as a subprocess and ends it by closing stdin.
- HTTP binds 127.0.0.1 unless ``--host`` says otherwise, and refuses any host outside the
  loopback range without a token (``--token`` or ``CONVSTORE_TOKEN``).
- It opens only an existing database and never writes to it; the SDK is imported only when the
  command runs (the ``mcp`` extra).
"""

from __future__ import annotations

import argparse
import sys

from convstore._http_guard import is_loopback
from convstore.cli.stores import existing_store
from convstore.errors import MissingDependencyError

__all__ = ["mcp_command"]


async def mcp_command(args: argparse.Namespace) -> int:
    """Serve the MCP server until the client leaves (stdio) or until interrupted (http)."""
    try:
        from convstore.mcp import create_server
        from convstore.mcp._http import serve_http
        from convstore.mcp._stdio import run_stdio
    except ImportError as exc:  # the SDK (a MissingDependencyError) or uvicorn
        raise MissingDependencyError("convstore mcp", exc.name or "mcp", "mcp") from exc
    http = args.transport == "http"
    if http and not is_loopback(args.host) and not args.token:
        print(
            f"convstore: serving MCP on {args.host} (beyond this machine) needs --token or "
            "CONVSTORE_TOKEN",
            file=sys.stderr,
        )
        return 2
    async with existing_store(args) as store:
        server = create_server(store, tenant=args.tenant)
        if not http:
            await run_stdio(server)
            return 0
        note = " (token required: Authorization: Bearer ...)" if args.token else ""

        def announce(host: str, port: int) -> None:
            shown = f"[{host}]" if ":" in host else host
            print(f"convstore MCP server: http://{shown}:{port}/mcp{note}", flush=True)

        await serve_http(
            server, host=args.host, port=args.port, token=args.token, announce=announce
        )
    return 0
