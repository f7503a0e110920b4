"""The streaming array reader: the same values as `json.loads`, any chunking; every cut fails."""

from __future__ import annotations

import io
import json

import pytest

from convstore.errors import MalformedExportError
from convstore.imports._jsonstream import array_items

from .exports import chatgpt_rich

_DOCUMENTS = [
    chatgpt_rich()[0].document(),
    {
        "title": 'ünïcödé ☕ 𝄞 "quoted" \\ back\\slash \u2028',
        "mapping": {},
        "n": [1.5e3, -0, True, None],
    },
    {},
]


def _read(data: bytes, chunk: int) -> list[object]:
    return [value for _, _, value in array_items(io.BytesIO(data), "c.json", chunk=chunk)]


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, 4096, 1 << 20])
def test_any_chunking_reads_what_json_loads_reads(chunk: int) -> None:
    for indent in (None, 2):
        data = ("\ufeff" + json.dumps(_DOCUMENTS, indent=indent, ensure_ascii=False)).encode()
        assert _read(data, chunk) == _DOCUMENTS


def test_offsets_name_where_each_element_starts() -> None:
    text = ' [ {"a": 1} ,\n{"b": [2]} ]  '
    items = list(array_items(io.BytesIO(text.encode()), "c.json", chunk=3))
    assert [(i, offset, text[offset]) for i, offset, _ in items] == [(0, 3, "{"), (1, 14, "{")]


def test_an_empty_array_and_a_single_object() -> None:
    assert _read(b" [ ] ", 2) == []
    assert _read(b'{"history": {}}', 4) == [{"history": {}}]


def _read_until_error(data: bytes) -> tuple[list[object], MalformedExportError | None]:
    read: list[object] = []
    try:
        for _, _, value in array_items(io.BytesIO(data), "c.json", chunk=5):
            read.append(value)
    except MalformedExportError as exc:
        return read, exc
    return read, None


def test_every_cut_of_a_file_is_a_malformed_export_error() -> None:
    elements = _DOCUMENTS[1:]
    data = json.dumps(elements, ensure_ascii=False).encode()
    first = len(json.dumps(elements[0], ensure_ascii=False).encode()) + 1  # after "["
    ends = [first, first + len(b", {}")]  # where each element's text is complete
    for cut in range(len(data)):
        read, error = _read_until_error(data[:cut])
        assert error is not None
        assert error.position.startswith("c.json, ")
        # Only the elements the cut left whole were handed out.
        assert read == [e for e, end in zip(elements, ends, strict=True) if end <= cut]


@pytest.mark.parametrize(
    ("text", "position", "problem"),
    [
        (
            '[{"a": 1}, {"a": tru, "b": "' + "x" * 40 + '"}]',
            "c.json, character 17, conversation 1",
            "Expecting value",
        ),
        (
            '[{"a": 1}, {"a": "',
            "c.json, character 17, conversation 1",
            "Unterminated string starting at (truncated file)",
        ),
        (
            '[{"a": 1} {"a": 2}]',
            "c.json, character 10, conversation 1",
            "expected ',' or ']' after a conversation",
        ),
        ('[{"a": 1}] x', "c.json, character 11", "unexpected data after the array"),
        ('"text"', "c.json, character 0", "expected a JSON array of conversations"),
        ("", "c.json, character 0", "the file is empty"),
    ],
)
def test_malformed_files_name_the_position(text: str, position: str, problem: str) -> None:
    with pytest.raises(MalformedExportError) as raised:
        _read(text.encode(), 4)
    assert (raised.value.position, raised.value.problem) == (position, problem)


def test_bytes_that_are_not_utf8_are_named_by_byte_offset() -> None:
    with pytest.raises(MalformedExportError) as raised:
        _read(b'[{"a": "caf\xe9"}]', 3)
    assert raised.value.position == "c.json, byte 11"
