"""The request reading both servers share (`convstore._http_guard`): one Host rule for both."""

from __future__ import annotations

import pytest

from convstore._http_guard import bearer, header, host_name, is_loopback, token_matches


@pytest.mark.parametrize(
    ("authority", "name"),
    [
        ("127.0.0.1:8765", "127.0.0.1"),
        ("LOCALHOST:1", "localhost"),
        ("localhost.", "localhost"),
        ("[::1]:8765", "::1"),
        ("inspector.example", "inspector.example"),
        (" box.lan ", "box.lan"),
        # Malformed: nothing to check, so refused by both servers.
        ("::1", None),
        ("bad host:x", None),
        ("user@127.0.0.1", None),
        ("", None),
        (".", None),
    ],
)
def test_a_host_header_is_read_one_way(authority: str, name: str | None) -> None:
    assert host_name(authority) == name


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("LOCALHOST", True), ("[::1]", True), ("127.9.9.9", True), ("0.0.0.0", False)],
)
def test_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_header_sent_twice_counts_as_none() -> None:
    scope = {"headers": [(b"host", b"a.example"), (b"host", b"localhost")]}
    assert header(scope, b"host") is None
    assert header({"headers": [(b"host", b"localhost")]}, b"host") == "localhost"


def test_a_bearer_token_and_nothing_else_matches() -> None:
    assert bearer("Bearer  s3cret ") == "s3cret"
    assert bearer("Basic czNjcmV0") is None
    assert token_matches("s3cret", b"s3cret")
    assert not token_matches("s3cre", b"s3cret")
    assert not token_matches(None, b"s3cret")
    assert not token_matches("\udcff", b"s3cret")
