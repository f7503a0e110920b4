"""The ``convstore`` command line: thin commands over the public API.

- ``main``: the entry point: parse, dispatch, one-line errors.
- ``parser``: every command's options and where its handler lives (the command table).
- ``stores``: opening the store a command works on, and saying where it is.
- ``commands``: the general commands (each opens the store, calls the API, prints).
- ``reading``: ``list`` and ``show``; ``views``: readable text views of conversations.
- ``search``: ``convstore search``.
- ``data``: ``export``, ``erase`` and ``prune``; ``transfer``: a conversation as one JSON
  document and back; ``importing``: ``convstore import``.
- ``serve``: the web inspector; ``mcp_command``: the MCP server.
- ``demo``: ``convstore demo``, the main job end to end.
"""

from convstore.cli.main import main

__all__ = ["main"]
