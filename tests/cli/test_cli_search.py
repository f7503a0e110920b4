"""``convstore search`` from a shell: a query may begin with ``-``; an empty answer says why.

argparse alone reads ``-draft`` as an unknown option and ``-hyena lisbon`` as ``-h`` (help);
the command reads the first token after ``search`` that is none of its options as the query.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convstore.cli import main


@pytest.fixture
def url(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    database = f"sqlite+aiosqlite:///{tmp_path / 'search.db'}"
    assert main(["demo", "--url", database, "--blobs", str(tmp_path / "blobs")]) == 0
    capsys.readouterr()
    return database


def _search(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["search", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_query_beginning_with_a_dash_is_the_query(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _, plain, _ = _search(capsys, "lisbon", "--url", url, "--json")
    everything = json.loads(plain)["hits"]
    assert everything
    for argv in (
        ["-zebra lisbon", "--url", url, "--json"],  # a dash, a space: argparse's positional
        ["--url", url, "-hyena lisbon", "--json"],  # -h... would be help
        ["--url", url, "--json", "-zebra lisbon"],  # last
        ["--url=" + url, "-zz lisbon", "--json"],
        ["--url", url, "--json", "--", "-zebra lisbon"],  # the user's own --
    ):
        code, out, err = _search(capsys, *argv)
        assert (code, err) == (0, ""), argv
        assert json.loads(out)["hits"] == everything, argv
    _, out, _ = _search(capsys, "-lisbon trip", "--url", url, "--json")
    assert json.loads(out)["hits"] == []  # every hit says Lisbon: all excluded


def test_a_query_of_exclusions_only_says_why_it_finds_nothing(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _search(capsys, "-draft", "--url", url)
    assert (code, err) == (0, "")
    assert out.startswith("no hits: a query of only -excluded terms matches nothing")
    assert '"report -draft"' in out
    code, out, _ = _search(capsys, '-"old draft" -memo', "--url", url)
    assert out.startswith("no hits: a query of only -excluded terms")
    _, out, _ = _search(capsys, "zebra", "--url", url)
    assert out == "no hits\n"  # words that are simply absent: nothing to explain


def test_help_and_usage_still_work(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["search", "-h"])
    assert exit_.value.code == 0
    assert "a query may begin with '-'" in " ".join(capsys.readouterr().out.split())
    with pytest.raises(SystemExit) as exit_:
        main(["search", "--tenant"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "expected one argument" in err
