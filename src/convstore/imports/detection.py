"""What a file handed to ``convstore import`` is: which export, or which request payload.

``detect_format(path)`` looks at as little as it must (a zip's or directory's names, a
manifest, the first element of a JSON array) and returns the format with the reason, in
words, so the command can say what it chose. It blocks (file reads): run it in a thread.

Invariants:

- A zip is checked first, whatever ``--format`` says (`check_zip`): a file that starts like a
  zip or is named ``.zip`` but cannot be opened as one is "not a zip file, or a truncated
  one", never a JSON error about its bytes.
- A directory is one export: its own files and those one folder down (an unpacked zip that
  wraps its files in a folder); nothing deeper, no symbolic link. Conversation files in more
  than one place (two exports side by side) are refused, not merged.
- The evidence is each product's own shape: ChatGPT's conversations have a ``mapping``,
  Claude's ``chat_messages``, Open WebUI's chats a ``history`` (under ``chat``); a convstore
  export has a ``manifest.json`` of format ``convstore.export`` and a ``show --json``
  document says ``"format": "convstore.conversation"``. A request payload is told by its
  top-level keys (``contents``: Gemini; ``input``: OpenAI Responses) and, for a ``messages``
  list, by what only one API puts in it; a payload that fits several is refused with the
  choices rather than guessed.
- Nothing here writes or imports; a file that is none of these raises `UnsupportedFormatError`
  saying what was expected and that ``--format`` names a format.
"""

from __future__ import annotations

import fnmatch
import json
import os
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any, Final

from convstore.errors import (
    InvalidInputError,
    MalformedExportError,
    MalformedPayloadError,
    UnsupportedFormatError,
)
from convstore.zip_input import open_zip

from ._jsonstream import array_items

__all__ = ["Detected", "check_zip", "detect_format", "detect_payload", "looks_like_zip"]

_ZIP_MAGIC: Final = (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")
_CONVERSATION_FILES: Final = ("conversations.json", "conversations-[0-9]*.json")
_MANIFEST: Final = "manifest.json"
_MANIFEST_BYTES: Final = 16 * 1024 * 1024
"""A manifest larger than this is no convstore manifest worth reading to decide a format."""
_PEEK_BYTES: Final = 64 * 1024 * 1024
"""The most of a JSON file read to decide its format (its first conversation)."""

_ANTHROPIC_BLOCKS: Final = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "document", "image"}
)
"""Content block types of Anthropic's Messages API that OpenAI's Chat Completions lacks."""
_OPENAI_BLOCKS: Final = frozenset({"image_url", "input_audio", "file"})
"""Content part types of OpenAI's Chat Completions that Anthropic's Messages API lacks."""
_OPENAI_KEYS: Final = frozenset({"max_completion_tokens", "response_format", "n", "logprobs"})


@dataclass(frozen=True, slots=True)
class Detected:
    """A format (`convstore.imports.FORMATS` or a `convstore.parse` source) and why."""

    format: str
    reason: str

    @property
    def is_export(self) -> bool:
        """Whether it is an export (every conversation of it) rather than one payload."""
        return self.format.endswith("-export") or self.reason.startswith("a convstore export")


def looks_like_zip(path: Path) -> bool:
    """Whether ``path`` is named or starts like a zip file."""
    if path.suffix.lower() == ".zip":
        return True
    try:
        with path.open("rb") as f:
            return f.read(4) in _ZIP_MAGIC
    except OSError:
        return False


def check_zip(path: Path) -> None:
    """Refuse a file that looks like a zip but cannot be read as one."""
    if path.is_dir() or not path.exists() or not looks_like_zip(path):
        return
    problem = None
    try:
        with open_zip(path) as archive:
            archive.infolist()
    except zipfile.BadZipFile as exc:
        problem = str(exc)
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc}") from exc
    if problem is not None:
        raise MalformedExportError(
            f"not a zip file, or a truncated one ({problem}): download or copy the export again",
            position=str(path),
        )


def detect_format(path: Path) -> Detected:
    """The format of the file, zip or directory at ``path``."""
    if path.is_dir():
        return _detect_export(_DirectoryFiles(path), f"the directory {path}")
    if not path.is_file():
        raise InvalidInputError(f"no file or directory at {path}")
    check_zip(path)
    if looks_like_zip(path):
        with open_zip(path) as archive:
            return _detect_export(_ZipFiles(archive), f"the zip {path.name}")
    with _open(path) as raw:
        return _detect_json(raw, path.name, single_file=True)


def detect_payload(payload: Any) -> Detected:
    """The format of one decoded JSON document (a request payload or a ``show --json``)."""
    if isinstance(payload, dict):
        # A document or exported conversation first: each names itself by a key no request has.
        found = _export_element(payload) or _payload(payload)
        if found is not None:
            return found
    raise UnsupportedFormatError(_unknown("the input"))


def _open(path: Path) -> IO[bytes]:
    try:
        return path.open("rb")
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc}") from exc


class _Files:
    """The names of an export's files (root and one folder down) and a way to open them."""

    names: list[str]

    def open(self, name: str) -> IO[bytes]:
        raise NotImplementedError


class _ZipFiles(_Files):
    def __init__(self, archive: zipfile.ZipFile) -> None:
        self._zip = archive
        self.names = [
            i.filename
            for i in archive.infolist()
            if not i.is_dir() and len(PurePosixPath(i.filename).parts) <= 2
        ]

    def open(self, name: str) -> IO[bytes]:
        return self._zip.open(name)


class _DirectoryFiles(_Files):
    def __init__(self, root: Path) -> None:
        self._root = root
        self.names = []
        try:
            for entry in _entries(root):
                if entry.is_file(follow_symlinks=False):
                    self.names.append(entry.name)
                elif entry.is_dir(follow_symlinks=False):
                    self.names.extend(
                        f"{entry.name}/{inner.name}"
                        for inner in _entries(Path(entry.path))
                        if inner.is_file(follow_symlinks=False)
                    )
        except OSError as exc:
            raise InvalidInputError(f"cannot read the directory {root}: {exc}") from exc
        self.names.sort()

    def open(self, name: str) -> IO[bytes]:
        return _open(self._root / name)


def _entries(directory: Path) -> Iterator[os.DirEntry[str]]:
    with os.scandir(directory) as entries:
        yield from (e for e in entries if not e.is_symlink())


def _folder(name: str) -> str:
    return str(PurePosixPath(name).parent)


def _detect_export(files: _Files, where: str) -> Detected:
    manifests = [n for n in files.names if PurePosixPath(n).name == _MANIFEST]
    for name in manifests:
        with files.open(name) as raw:
            text = raw.read(_MANIFEST_BYTES + 1)
        try:
            manifest = json.loads(text) if len(text) <= _MANIFEST_BYTES else None
        except (ValueError, UnicodeDecodeError):
            manifest = None
        if isinstance(manifest, dict) and manifest.get("format") == "convstore.export":
            return Detected("convstore", f"a convstore export ({name} of format convstore.export)")
    conversations = [
        n
        for n in files.names
        if any(fnmatch.fnmatch(PurePosixPath(n).name, p) for p in _CONVERSATION_FILES)
    ]
    folders = sorted({_folder(n) for n in conversations})
    if len(folders) > 1:
        shown = ", ".join("the top" if f == "." else f"{f}/" for f in folders)
        raise InvalidInputError(
            f"{where} holds conversation files in more than one place ({shown}): one export "
            "at a time, so import each of them on its own"
        )
    candidates = conversations or sorted(
        (n for n in files.names if n.lower().endswith(".json")),
        key=lambda n: (n.count("/"), n),
    )
    for name in candidates:
        with files.open(name) as raw:
            try:
                found = _detect_json(raw, name, single_file=False)
            except (UnsupportedFormatError, MalformedPayloadError):
                continue
        if found.is_export:
            return found
    raise UnsupportedFormatError(
        f"{where} holds no export convstore knows: expected conversations.json (ChatGPT, "
        "Claude), an Open WebUI chat export (.json) or a convstore export (manifest.json); "
        "--format names the format"
    )


def _detect_json(raw: IO[bytes], name: str, *, single_file: bool) -> Detected:
    """The format of a JSON file from its first element (or its one object)."""
    head = raw.read(1024)
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped[:1] not in (b"[", b"{"):
        raise UnsupportedFormatError(f"{name} is not JSON (it starts {head[:16]!r})")
    rest = _Joined(head, raw)
    if stripped[:1] == b"{" and single_file:
        # One object: a payload, a 'show --json' document, or one exported conversation.
        text = rest.read(_PEEK_BYTES + 1)
        if len(text) > _PEEK_BYTES:
            raise UnsupportedFormatError(
                f"{name} is one JSON object over {_PEEK_BYTES >> 20} MiB: too large for a "
                "request payload; --format names an export's format"
            )
        try:
            document = json.loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            raise MalformedPayloadError(f"{name} is not valid JSON: {exc}") from exc
        return detect_payload(document)
    for _, _, element in array_items(rest, name):
        found = _export_element(element) if isinstance(element, dict) else None
        if found is None:
            break
        return Detected(found.format, found.reason.replace("FILE", name))
    raise UnsupportedFormatError(_unknown(name))


def _export_element(element: dict[str, Any]) -> Detected | None:
    """The export one conversation record belongs to, by its shape."""
    if "mapping" in element:
        return Detected("chatgpt-export", "a ChatGPT export (FILE: conversations with a 'mapping')")
    if "chat_messages" in element:
        return Detected(
            "claude-export", "a Claude export (FILE: conversations with 'chat_messages')"
        )
    chat = element.get("chat")
    if "history" in element or (isinstance(chat, dict) and "history" in chat):
        return Detected(
            "openwebui-export", "an Open WebUI export (FILE: chats with a message 'history')"
        )
    if element.get("format") == "convstore.conversation":
        return Detected("convstore", "a convstore conversation document ('show --json')")
    return None


def _payload(payload: dict[str, Any]) -> Detected | None:
    """The API a request payload is for, when its shape says so."""
    if "contents" in payload:
        return Detected("gemini", "a Gemini request (a 'contents' list)")
    if "input" in payload and "messages" not in payload:
        return Detected("openai-responses", "an OpenAI Responses request (an 'input')")
    messages = payload.get("messages")
    if not isinstance(messages, list):
        return None
    blocks = {
        block.get("type")
        for message in messages
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict)
    }
    tools = [t for t in payload.get("tools") or () if isinstance(t, dict)]
    anthropic = (
        isinstance(payload.get("system"), str | list)
        or "thinking" in payload
        or bool(blocks & _ANTHROPIC_BLOCKS)
        or any("input_schema" in t for t in tools)
    )
    openai = (
        bool(blocks & _OPENAI_BLOCKS or _OPENAI_KEYS & payload.keys())
        or any(t.get("type") == "function" and "function" in t for t in tools)
        or any(
            isinstance(m, dict)
            and (m.get("role") in ("system", "developer", "tool") or "tool_calls" in m)
            for m in messages
        )
    )
    if anthropic and not openai:
        return Detected(
            "anthropic", "an Anthropic Messages request ('messages' with Anthropic's blocks)"
        )
    if openai and not anthropic:
        return Detected(
            "openai-chat",
            "an OpenAI Chat Completions request ('messages' with OpenAI's roles; "
            "--format mistral or kimi for those dialects)",
        )
    raise UnsupportedFormatError(
        "the input is a 'messages' request that fits more than one API: say which with "
        "--format openai-chat, anthropic, mistral or kimi"
    )


def _unknown(what: str) -> str:
    return (
        f"{what} is no format convstore knows: a provider request (messages, contents or "
        "input), a 'show --json' document, or a ChatGPT, Claude, Open WebUI or convstore "
        "export; --format names the format"
    )


class _Joined:
    """``head`` then the rest of ``raw``, as one readable stream."""

    def __init__(self, head: bytes, raw: IO[bytes]) -> None:
        self._head = head
        self._raw = raw

    def read(self, size: int = -1, /) -> bytes:
        head, self._head = self._head, b""
        if size < 0:
            return head + self._raw.read()
        if len(head) >= size:
            self._head = head[size:]
            return head[:size]
        return head + self._raw.read(size - len(head))
