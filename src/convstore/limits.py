"""The documented limits on what convstore stores, and the checks on the store's own arguments.

`convstore.message_checks.check_messages` enforces these limits on messages:
`ConversationStore.append` (and `complete_tool_call`) call it on a batch before
any blob or row is written, so a refused batch leaves nothing behind. `convstore.parse` keeps
histories as they were stored: it refuses only what no provider can have received as JSON text
(lone surrogates, NaN and infinities) and what it would itself have to serialise past
`MAX_JSON_DEPTH` (a Gemini function response), and keeps tool-argument text too deep for it
verbatim. A parsed history that breaks another limit is refused when it is appended.

================================  ==============  =============================================
limit                             value           over it
================================  ==============  =============================================
`MAX_JSON_DEPTH`                  64 levels       `InvalidMessageError` (arguments, tool
                                                  outputs, error details, provider details)
`MAX_PART_CHARS`                  16 Mi chars     `InvalidMessageError`
`MAX_MESSAGE_CHARS`               32 Mi chars     `InvalidMessageError` (all parts and fields
                                                  of one message together)
`MAX_PARTS_PER_MESSAGE`           10,000 parts    `InvalidMessageError`
`MAX_FILENAME_LENGTH`             1,024 chars     `InvalidMessageError`
filename characters               no C0/C1        `InvalidMessageError`
                                  controls, no
                                  bidi overrides
media type                        ``type/sub``    `InvalidMessageError`
                                  (RFC 6838),
                                  255 chars
strings                           valid Unicode   `InvalidMessageError` (a lone surrogate cannot
                                  without NUL     be stored as UTF-8 by any database; NUL: see
                                                  "One rule for NUL" below)
numbers                           finite          `InvalidMessageError` (NaN and infinities are
                                                  not JSON; PostgreSQL refuses them)
integers                          64-bit signed   `InvalidMessageError` (`JSON_INT_MIN` ..
                                                  `JSON_INT_MAX`; see below)
inline file bytes                 the store's     `AttachmentTooLargeError`, before any blob is
                                  ``max_attach-   written (streams are checked as they arrive)
                                  ment_size``
================================  ==============  =============================================

The store's own arguments are checked by the functions below before any statement runs, with the
same result on SQLite and PostgreSQL (`InvalidInputError`, nothing written):

================================  =============================================================
argument                          accepted
================================  =============================================================
conversation id                   1 to `MAX_CONVERSATION_ID_LENGTH` (64) characters
tenant, idempotency key, call id  1 to `MAX_KEY_LENGTH` (255) characters
title                             at most `MAX_TITLE_LENGTH` (4,096) characters
every such string, titles and     valid Unicode without NUL characters (the NUL rule above), and
summaries                         no lone surrogate (no database stores one)
metadata (and state)              a JSON object: string keys, finite numbers, 64-bit integers,
                                  strings as above, at most `MAX_JSON_DEPTH` deep; metadata
                                  also at most `MAX_METADATA_ENTRIES` (1,000) top-level entries
                                  and `MAX_METADATA_CHARS` (1 Mi) characters of compact JSON
``limit`` (`list_conversations`)  0 to `MAX_LIST_LIMIT` (10,000)
``last`` and sequence numbers     0 to `MAX_SEQ` (2**63 - 1, what both databases' integers hold)
================================  =============================================================

One rule for NUL: no string convstore stores may contain NUL (U+0000), whatever the field --
message text, tool arguments and outputs (values and object keys), message ids, provider and
model names, native records, file names, titles, summaries, tenants, keys, metadata and state.
PostgreSQL's ``text`` cannot hold NUL at all, and a history must behave the same whichever
database keeps it, so the rule is the database's narrowest one, applied everywhere rather than
column by column. The error (`InvalidMessageError` for a message, `InvalidInputError` for an
argument) names the field: ``messages[0].parts[1].arguments.path: cannot contain NUL
characters``, ``title cannot contain NUL characters``; nothing is written.

Why these values:

- JSON depth: real payloads nest a few levels (the accepted corpus: 9 for whole requests);
  pydantic stops near 255 and every JSON encoder on the way to a database or a provider
  recurses once per level, so 64 keeps every layer far from Python's recursion limit whatever
  the caller's own stack depth, and is above any structured-output schema a provider accepts.
- Part size: the largest context window today is about 2 M tokens (~8 M characters); a single
  part larger than twice that can never be sent whole, and it bounds the memory one row costs
  on load and render. Characters are counted in the part's text fields and in every string and
  object key of its JSON values (a tool result's content parts included); file bytes are blobs
  and have their own limit.
- Filenames are metadata shown to a model or a person and are never used for storage keys
  (blob keys derive from the bytes alone). Path separators and ``..`` are therefore kept; what is
  refused is what would corrupt a log line or a rendered text note (control characters,
  newlines) or spoof a name's reading order (bidi embedding, override and isolate controls).
  Anthropic document titles and Gemini display names travel in the same field, hence 1,024
  rather than a file system's 255.

- Integers: Python's integers are unbounded, JSON's are not. PostgreSQL and SQLite both keep
  JSON as text, so a 5,000-digit integer would be stored, and then every load would fail:
  Python refuses to convert an integer of more than 4,300 digits to or from text by default.
  Refusing at write time what no database integer, no 64-bit JSON library (orjson, most
  non-Python clients) and no provider can hold keeps "reading never fails on what writing
  accepted"; a tool with larger numbers sends them as strings (or floats).
- Parts per message and message size: a message is rendered, fetched and decoded whole; one of
  a million parts took 1.5 GB to render. No provider accepts more than a few thousand content
  blocks in a request, and twice the part limit bounds one message's memory on load.
- Titles and metadata: a title is one line shown in every list, search hit and page header; a
  page of 50 (the inspector's, the MCP list) stays under 200 K characters of titles whatever the
  conversations hold, and 4,096 is far above any product's generated or typed title (a
  30-million-character title once made a 30 MB list page). Metadata travels with every header
  a list returns and writes one index row per top-level entry
  (`convstore.store.conversations.metadata_tags`): 1,000 entries and 1 Mi characters bound both, far
  above the labels and ids it is meant for; larger application data belongs in messages or state.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Final

from convstore.errors import InvalidInputError

__all__ = [
    "JSON_INT_MAX",
    "JSON_INT_MIN",
    "MAX_CONVERSATION_ID_LENGTH",
    "MAX_FILENAME_LENGTH",
    "MAX_JSON_DEPTH",
    "MAX_KEY_LENGTH",
    "MAX_LIST_LIMIT",
    "MAX_MEDIA_TYPE_LENGTH",
    "MAX_MESSAGE_CHARS",
    "MAX_METADATA_CHARS",
    "MAX_METADATA_ENTRIES",
    "MAX_PARTS_PER_MESSAGE",
    "MAX_PART_CHARS",
    "MAX_SEQ",
    "MAX_TITLE_LENGTH",
    "NUL_REFUSED",
    "SURROGATE",
    "check_count",
    "check_json_object",
    "check_key",
    "check_metadata_size",
    "check_seq",
    "check_text",
    "check_title",
    "has_lone_surrogate",
    "json_depth",
    "number_problem",
]

MAX_JSON_DEPTH: Final = 64
"""Deepest nesting of arrays and objects in one JSON value (``{"a": [1]}`` is 2 deep)."""

MAX_PART_CHARS: Final = 16 * 1024 * 1024
"""Characters of text one part may hold: its text fields plus its JSON strings and keys."""

MAX_MESSAGE_CHARS: Final = 32 * 1024 * 1024
"""Characters of text one message may hold: every part and the message's own fields."""

MAX_PARTS_PER_MESSAGE: Final = 10_000
"""Most parts one message may have (the parts of a content result not counted)."""

MAX_FILENAME_LENGTH: Final = 1024
"""Longest `FilePart.filename`, in characters."""

MAX_MEDIA_TYPE_LENGTH: Final = 255
"""Longest media type (the model's own limit)."""

JSON_INT_MIN: Final = -(2**63)
"""Smallest integer a stored JSON value may hold (a 64-bit signed integer)."""

JSON_INT_MAX: Final = 2**63 - 1
"""Largest integer a stored JSON value may hold (a 64-bit signed integer)."""

MAX_CONVERSATION_ID_LENGTH: Final = 64
"""Longest conversation id."""

MAX_KEY_LENGTH: Final = 255
"""Longest tenant, idempotency key or tool-call id handed to a store method."""

MAX_LIST_LIMIT: Final = 10_000
"""Most conversations one `list_conversations` call returns."""

MAX_TITLE_LENGTH: Final = 4096
"""Longest conversation title, in characters."""

MAX_METADATA_ENTRIES: Final = 1000
"""Most top-level entries a conversation's metadata may have (each is an index row)."""

MAX_METADATA_CHARS: Final = 1024 * 1024
"""Longest a conversation's metadata may be, in characters of its compact JSON text."""

MAX_SEQ: Final = 2**63 - 1
"""Largest sequence number or ``last=`` count a store method takes (both databases' integers)."""

SURROGATE: Final = re.compile("[\ud800-\udfff]")
"""Matches any surrogate code point (in a Python string, always a lone one)."""

NUL_REFUSED: Final = "cannot contain NUL characters (\\x00)"
"""How every refusal under the NUL rule ends (after the name of the field)."""


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (not Unicode: no database stores it as UTF-8)."""
    return not text.isascii() and SURROGATE.search(text) is not None


def json_depth(value: Any) -> int:
    """How deeply arrays and objects nest in ``value`` (0 for a scalar), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list | tuple):
            children = node
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in children if isinstance(child, dict | list | tuple))
    return deepest


# -- the store's own arguments -----------------------------------------------------------------


def check_text(value: str | None, what: str, *, max_length: int | None = None) -> None:
    """Refuse a string argument no database stores alike (NUL, lone surrogates, too long).

    ``None`` passes (an absent optional argument). Raises `InvalidInputError` naming ``what``.
    """
    if value is None:
        return
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, not {type(value).__name__}")
    if max_length is not None and not 1 <= len(value) <= max_length:
        raise InvalidInputError(f"{what} must be 1 to {max_length} characters, got {len(value)}")
    if "\x00" in value:
        raise InvalidInputError(f"{what} {NUL_REFUSED}")
    if has_lone_surrogate(value):
        raise InvalidInputError(f"{what} is not valid Unicode (it holds a lone surrogate)")


def check_title(value: str | None) -> None:
    """`check_text` for a conversation title: empty allowed, at most `MAX_TITLE_LENGTH`."""
    if isinstance(value, str) and len(value) > MAX_TITLE_LENGTH:
        raise InvalidInputError(
            f"title must be at most {MAX_TITLE_LENGTH:,} characters, got {len(value):,}"
        )
    check_text(value, "title")


def check_metadata_size(value: Mapping[str, Any], what: str = "metadata") -> None:
    """Refuse metadata over `MAX_METADATA_ENTRIES` entries or `MAX_METADATA_CHARS` characters.

    ``value`` is an already checked JSON object (`check_json_object`). Raises
    `InvalidInputError` naming ``what`` and the limit.
    """
    if len(value) > MAX_METADATA_ENTRIES:
        raise InvalidInputError(
            f"{what} may have at most {MAX_METADATA_ENTRIES:,} entries, got {len(value):,}"
        )
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    if size > MAX_METADATA_CHARS:
        raise InvalidInputError(
            f"{what} may be at most {MAX_METADATA_CHARS:,} characters of JSON, got {size:,}"
        )


def check_key(value: str | None, what: str) -> None:
    """`check_text` for a tenant, an idempotency key or a call id (1 to `MAX_KEY_LENGTH`)."""
    check_text(value, what, max_length=MAX_KEY_LENGTH)


def check_count(value: int | None, what: str, *, maximum: int = MAX_SEQ) -> None:
    """Refuse an integer argument outside ``0..maximum`` (``None`` passes)."""
    _check_int(value, what, 0, maximum)


def check_seq(value: int | None, what: str, *, minimum: int = 1) -> None:
    """Refuse a message ``seq`` argument outside ``minimum..MAX_SEQ`` (``None`` passes).

    Stored seqs start at 1; ``minimum=0`` where 0 means "before the first message" (as
    ``truncate(after_seq=0)`` does) or where a read reports 0 as not found.
    """
    _check_int(value, what, minimum, MAX_SEQ)


def _check_int(value: int | None, what: str, minimum: int, maximum: int) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{what} must be an integer, not {type(value).__name__}")
    if not minimum <= value <= maximum:
        raise InvalidInputError(f"{what} must be between {minimum} and {maximum:,}, got {value}")


def check_json_object(value: Mapping[str, Any], what: str) -> None:
    """Refuse a metadata or state object that a database would store differently or not at all.

    Keys and strings as `check_text`; numbers finite; integers within 64 bits; nesting at most
    `MAX_JSON_DEPTH`. Raises `InvalidInputError` naming the offending path.

    Memory: only non-empty containers wait on the stack, each with a link to its parent
    instead of its path, which is spelled out only to name a refusal (a restored document may
    hold a million values; their paths would cost more than the values).
    """
    stack: list[tuple[Any, _Path, int]] = [(value, what, 1)]
    while stack:
        node, path, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise InvalidInputError(f"{_spelled(path)} nests deeper than {MAX_JSON_DEPTH} levels")
        children: Any
        if isinstance(node, dict):
            for key in node:
                if not isinstance(key, str):
                    raise InvalidInputError(
                        f"{_spelled(path)} has a key that is not a string: {key!r}"
                    )
                if "\x00" in key or has_lone_surrogate(key):
                    check_text(key, f"{_spelled(path)} key {key[:40]!r}")
            children = node.items()
        else:
            children = enumerate(node)
        for step, child in children:
            if type(child) is str:
                if "\x00" in child or (not child.isascii() and has_lone_surrogate(child)):
                    check_text(child, _spelled((path, step)))
            elif isinstance(child, dict | list):
                if child:
                    stack.append((child, (path, step), depth + 1))
                elif depth >= MAX_JSON_DEPTH:
                    raise InvalidInputError(
                        f"{_spelled((path, step))} nests deeper than {MAX_JSON_DEPTH} levels"
                    )
            elif isinstance(child, str):
                check_text(child, _spelled((path, step)))
            elif problem := number_problem(child):
                raise InvalidInputError(f"{_spelled((path, step))}: {problem}")


_Path = str | tuple[Any, str | int]
"""A JSON path: the name of the root, or (the parent's path, a key or an index)."""


def _spelled(path: _Path) -> str:
    steps: list[str] = []
    while isinstance(path, tuple):
        path, step = path
        steps.append(f"[{step}]" if isinstance(step, int) else f".{step}")
    return path + "".join(reversed(steps))


def number_problem(value: Any) -> str | None:
    """Why ``value`` cannot be stored as a JSON number (NaN, infinities, over 64 bits), or None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        if JSON_INT_MIN <= value <= JSON_INT_MAX:
            return None
        return "an integer outside the 64-bit range JSON values may hold (send it as a string)"
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value} is not a JSON number"
    return None
