"""Names the AI SDK UI adapter's two directions share (`convstore.integrations.ai_sdk`).

The file URL callbacks, and the metadata keys of what convstore adds to a UI message: a
``content`` tool result's kind under ``metadata.aiPython.toolResultKinds`` (vercel-labs/ai-python's
convention) and convstore's own fields under ``providerMetadata.convstore``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from convstore.model import FilePart

__all__ = ["ADAPTER_KEY", "KINDS_KEY", "OWN_KEY", "FileUrl", "JsonDict", "ResolveUrl"]

FileUrl = Callable[[FilePart], str]
"""Gives the absolute URL at which the application serves a stored file part."""
ResolveUrl = Callable[[str], FilePart | None]
"""Maps one of the application's own file URLs back to a stored `FilePart` (else ``None``)."""

ADAPTER_KEY: Final = "aiPython"
KINDS_KEY: Final = "toolResultKinds"
OWN_KEY: Final = "convstore"

JsonDict = dict[str, Any]
