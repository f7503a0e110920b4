"""``convstore search``'s read-only path prints what the store's search prints, byte for byte.

On a current SQLite file whose index has nothing pending, the command reads the file through
``sqlite3`` (`convstore.cli.search.quick_search`) instead of opening the store. Every query here
runs both ways, the store's way forced by ``CONVSTORE_SEARCH_STORE_ONLY=1``, and the two outputs
(stdout, stderr, exit status) must be equal; each quick run must really have been quick. Then
what sends a search to the store (pending index work, another revision, another database), a
missing file, that the quick path writes nothing and loads no SQLAlchemy.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from convstore import (
    ContentOutput,
    ConversationStore,
    FilePart,
    Message,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)
from convstore.cli import main
from convstore.cli import search as search_command
from convstore.cli.parser import build_parser
from convstore.db import sqlite_path
from convstore.db.sqlite.read_only import SELECT_SETTING, ReadOnlySqlite, plain_sqlite_path

TENANTS = (None, "acme", "globex", "initech")
WORDS = (
    *("quarterly", "report", "revenue", "forecast", "draft", "invoice", "walrus", "migration"),
    *("latency", "budget", "Lisbon", "Zürich", "Größe", "straße", "naïve", "café", "deploy"),
    *("rollback", "parse_json_payload", "get_user_by_id"),
)
CJK = ("東京タワーに行きました", "我喜欢吃北京烤鸭", "京都の寺はきれいです")


def _sentence(rng: random.Random) -> str:
    words = rng.choices(WORDS, k=rng.randint(4, 30))
    if rng.random() < 0.2:
        words.append(rng.choice(CJK))
    if rng.random() < 0.3:
        words.insert(rng.randrange(len(words)), rng.choice(["ok", "AI", "Go", "é", "⟦x⟧"]))
    return " ".join(words) + rng.choice([".", "?", "!", ""])


def _turn(rng: random.Random, n: int) -> list[Message]:
    """A user turn and its answer: text, tool calls and results, thinking, files, long text."""
    call_id = f"call_{n}"
    answer: list[str | FilePart | ThinkingPart | ToolCallPart] = []
    if rng.random() < 0.4:
        answer.append(ThinkingPart(text=f"thinking about {_sentence(rng)}", provider="anthropic"))
    answer.append(_sentence(rng) * rng.choice([1, 1, 2, 40]))  # some long enough to clip
    messages = [Message.user(_sentence(rng))]
    if rng.random() < 0.3:
        answer.append(ToolCallPart(id=call_id, name="get_user_by_id", arguments={"id": n}))
        messages.append(Message.assistant(*answer))
        output = (
            ContentOutput(parts=[TextPart(text=_sentence(rng))])
            if rng.random() < 0.5
            else {"report": _sentence(rng), "rows": n}
        )
        messages.append(Message.tool_result(call_id, output))
        messages.append(Message.assistant(_sentence(rng)))
    else:
        messages.append(Message.assistant(*answer))
    return messages


async def _fill(url: str, blobs: str) -> dict[str, list[str]]:
    """About a hundred conversations over four tenants, some branched; the index caught up."""
    rng = random.Random(35)
    ids: dict[str, list[str]] = {str(t): [] for t in TENANTS}
    async with ConversationStore(url, blobs=blobs) as store:
        for n in range(100):
            tenant = TENANTS[n % len(TENANTS)]
            title = None if n % 5 == 0 else f"{rng.choice(WORDS)} {rng.choice(WORDS)} {n}"
            conv = await store.create_conversation(title=title, tenant=tenant)
            ids[str(tenant)].append(conv.id)
            if n % 7 == 0:
                await store.append(conv.id, Message.system("You are terse."), tenant=tenant)
            for turn in range(rng.randint(1, 4)):
                await store.append(conv.id, _turn(rng, n * 10 + turn), tenant=tenant)
            if n % 6 == 0:  # an edit of the first question: a branch, then back or not
                await store.append(
                    conv.id,
                    [Message.user(_sentence(rng)), Message.assistant(_sentence(rng))],
                    parent_seq=None if rng.random() < 0.5 else 1,
                    tenant=tenant,
                )
        await store.search_index.catch_up()
    return ids


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, dict[str, list[str]]]:
    where = tmp_path_factory.mktemp("quick-search")
    url, blobs = f"sqlite+aiosqlite:///{where / 'corpus.db'}", str(where / "blobs")
    ids = asyncio.run(_fill(url, blobs))
    Path(blobs).mkdir(exist_ok=True)  # no attachments: made by the first one, made here
    return url, blobs, ids


@pytest.fixture
def quick_taken(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each run's quick path answered (``True``) or declined (``False``)."""
    taken: list[bool] = []
    original = search_command.quick_search

    def recording(args: object) -> int | None:
        status = original(args)  # type: ignore[arg-type]
        taken.append(status is not None)
        return status

    monkeypatch.setattr(search_command, "quick_search", recording)
    return taken


def _run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str], *,
    store_only: bool,
) -> tuple[int, str, str]:  # fmt: skip
    with monkeypatch.context() as patch:
        patch.setenv(search_command.QUICK_PATH_OFF, "1" if store_only else "0")
        code = main(["search", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _both(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> tuple[int, str, str]:
    """Both paths' (status, stdout, stderr), asserted equal; the quick one's."""
    quick = _run(capsys, monkeypatch, argv, store_only=False)
    store = _run(capsys, monkeypatch, argv, store_only=True)
    assert quick == store, argv
    return quick


def _queries(ids: dict[str, list[str]]) -> list[list[str]]:
    some = ids["acme"][3]
    branched = ids["None"][0]  # n == 0: branched
    return [
        ["report"],
        ["REPORT revenue"],
        ['"quarterly report"'],
        ['"report revenue" -draft'],
        ["report -draft -invoice"],
        ["report -ok"],
        ["ok"],
        ["ok AI"],
        ["ok -report"],
        ["Go deploy"],
        ["é"],
        ["größe"],
        ["GRÖSSE"],
        ["straße zürich"],
        ["東京"],
        ["北京烤鸭"],
        ["parse_json_payload"],
        ["get_user_by_id"],
        ['"id":3'],
        ["⟦x⟧"],
        ["thinking"],
        ["thinking", "--thinking"],
        ["walrus", "--tenant", "acme"],
        ["walrus", "--tenant", "globex", "--limit", "3"],
        ["walrus", "--tenant", "nobody-at-all"],
        ["report", "--conversation", some],
        ["report", "--conversation", branched],
        ["report", "--conversation", some, "--tenant", "globex"],
        ["report", "--limit", "1"],
        ["report", "--limit", "0"],
        ["report", "--limit", "1000"],
        ["latency", "--json"],
        ["budget rollback", "--json", "--limit", "4"],
        ["-draft"],
        ['""'],
        ["zzzz-nothing-matches"],
        ["report", "--limit", "2000"],  # refused: the same one line both ways
        ["report", "--cursor", "not-a-cursor"],
    ]


def test_both_paths_print_the_same_bytes(
    database: tuple[str, str, dict[str, list[str]]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    quick_taken: list[bool],
) -> None:
    url, _, ids = database
    seen_off_path = seen_more = False
    for query in _queries(ids):
        argv = [*query, "--url", url]
        quick_taken.clear()
        code, out, err = _both(capsys, monkeypatch, argv)
        assert quick_taken[-1:] == [False], (argv, err)  # the store's run
        assert quick_taken[:-1] == [True] or err, (argv, err)  # quick, unless refused
        seen_off_path |= "(off the active path)" in out
        seen_more |= "more: add --cursor" in out
        if code == 0 and "--json" not in query and "--limit" not in query:
            assert out.strip(), argv
    assert seen_off_path, "the corpus has hits off a branched conversation's active path"
    assert seen_more


def test_pages_follow_each_other_the_same_way(
    database: tuple[str, str, dict[str, list[str]]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    quick_taken: list[bool],
) -> None:
    url, _, _ = database
    cursor: str | None = None
    pages = 0
    while True:
        argv = ["report", "--json", "--limit", "7", "--url", url]
        if cursor is not None:
            argv += ["--cursor", cursor]
        _, out, _ = _both(capsys, monkeypatch, argv)
        pages += 1
        cursor = json.loads(out)["next_cursor"]
        if cursor is None or pages == 6:
            break
    assert pages == 6
    assert quick_taken == [True, False] * pages


def _pending_database(tmp_path: Path) -> str:
    url = f"sqlite+aiosqlite:///{tmp_path / 'pending.db'}"

    async def fill() -> None:
        async with ConversationStore(url, blobs=str(tmp_path / "blobs")) as store:
            store.search_index.background = False
            conv = await store.create_conversation(title="walrus")
            await store.append(conv.id, [Message.user("walrus one")])
            await store.search_index.catch_up()
            await store.append(conv.id, [Message.assistant("walrus two, not indexed yet")])

    asyncio.run(fill())
    return url


def _args(*argv: str) -> object:
    return build_parser().parse_args(["search", *argv])


def test_pending_index_work_goes_to_the_store_which_catches_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = _pending_database(tmp_path)
    path = sqlite_path(url)
    assert path is not None
    with ReadOnlySqlite(path) as db:
        assert db.search_pending()
    assert search_command.quick_search(_args("walrus", "--url", url)) is None  # type: ignore[arg-type]
    assert capsys.readouterr().out == ""  # declined having printed nothing
    code, out, _ = _run(capsys, monkeypatch, ["walrus", "--url", url], store_only=False)
    assert code == 0
    assert "not indexed yet" in out  # the store caught up
    with ReadOnlySqlite(path) as db:
        assert not db.search_pending()
    assert _run(capsys, monkeypatch, ["walrus", "--url", url], store_only=False) == (0, out, "")


def test_another_revision_goes_to_the_store(
    database: tuple[str, str, dict[str, list[str]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = sqlite_path(database[0])
    assert source is not None
    copy = tmp_path / "older.db"
    with sqlite3.connect(source) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    with sqlite3.connect(copy) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '0013'")
    url = f"sqlite+aiosqlite:///{copy}"
    assert search_command.quick_search(_args("report", "--url", url)) is None  # type: ignore[arg-type]
    code, out, err = _both(capsys, monkeypatch, ["report", "--url", url])
    assert (code, out) == (1, "")
    assert err.startswith("convstore: SchemaOutOfDateError") and err.count("\n") == 1


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+asyncpg://user:secret@localhost:1/db",
        "sqlite+aiosqlite://",
        "sqlite+aiosqlite:///:memory:",
        "sqlite+aiosqlite:///a%20b.db",
        "sqlite+aiosqlite:///x.db?mode=ro",
        "sqlite:///x.db",
    ],
)
def test_urls_it_does_not_read_plainly_go_to_the_store(url: str) -> None:
    assert plain_sqlite_path(url) is None
    assert search_command.quick_search(_args("report", "--url", url)) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "url",
    [
        "sqlite+aiosqlite:///convstore.db",
        "sqlite+aiosqlite:////tmp/some where/x.db",
        "sqlite+aiosqlite:///../up/x.db",
        "sqlite+aiosqlite:///a@b:c.db",
    ],
)
def test_a_plain_url_names_the_file_the_store_opens(url: str) -> None:
    assert plain_sqlite_path(url) == sqlite_path(url)


def test_a_missing_file_is_the_same_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for where in (tmp_path / "missing.db", Path("relative-missing.db")):
        url = f"sqlite+aiosqlite:///{where}"
        code, out, err = _both(capsys, monkeypatch, ["report", "--url", url])
        assert (code, out) == (1, "")
        assert err == f"convstore: DatabaseNotFoundError: {where}\n" or (
            err.startswith("convstore: DatabaseNotFoundError") and err.count("\n") == 1
        )
        assert not where.exists()


def _files(path: Path) -> tuple[str, str]:
    """The database file's and its WAL's digests (an absent WAL is empty: no frames)."""
    wal = path.with_name(path.name + "-wal")
    return (
        hashlib.sha256(path.read_bytes()).hexdigest(),
        hashlib.sha256(wal.read_bytes() if wal.exists() else b"").hexdigest(),
    )


def test_a_search_with_nothing_pending_writes_nothing(
    database: tuple[str, str, dict[str, list[str]]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    quick_taken: list[bool],
) -> None:
    url, blobs, _ = database
    path = sqlite_path(url)
    assert path is not None
    before = _files(path)
    for argv in (["report"], ["walrus", "--tenant", "acme"], ["report", "--blobs", blobs]):
        code, out, _ = _run(capsys, monkeypatch, [*argv, "--url", url], store_only=False)
        assert code == 0 and out
    assert quick_taken == [True, True, True]
    assert _files(path) == before


def test_blobs_given_where_the_recorded_location_is_gone_goes_to_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'moved.db'}"
    recorded = tmp_path / "blobs"

    async def fill() -> None:
        async with ConversationStore(url, blobs=str(recorded)) as store:
            conv = await store.create_conversation(title="walrus")
            await store.append(conv.id, [Message.user("walrus one")])
            await store.search_index.catch_up()

    asyncio.run(fill())
    recorded.mkdir(exist_ok=True)  # no attachments: made by the first one, made here
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    argv = ["walrus", "--url", url, "--blobs", str(elsewhere)]
    assert search_command.quick_search(_args(*argv)) is not None  # recorded, still there
    capsys.readouterr()
    recorded.rename(tmp_path / "blobs-moved")
    assert search_command.quick_search(_args(*argv)) is None
    code, out, err = _both(capsys, monkeypatch, argv)
    assert code == 0 and "walrus" in out
    assert "does not exist (moved?)" in err


def test_the_setting_statement_is_the_stores(
    database: tuple[str, str, dict[str, list[str]]],
) -> None:
    from sqlalchemy.dialects import sqlite

    from convstore.db.statements.maintenance import SELECT_SETTING as STORES

    compiled = str(STORES.compile(dialect=sqlite.dialect())).replace("settings.", "")
    assert " ".join(compiled.replace('"key"', "key").split()) == SELECT_SETTING.replace(":key", "?")
    path = sqlite_path(database[0])
    assert path is not None
    with ReadOnlySqlite(path) as db:
        assert db.setting("blobs") == "blobs"  # recorded beside the file, relative
        assert db.setting("no such key") is None


def test_a_file_that_is_no_database_is_the_same_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    where = tmp_path / "notes.db"
    where.write_bytes(b"not a database, just text\n" * 200)
    argv = ["report", "--url", f"sqlite+aiosqlite:///{where}"]
    assert search_command.quick_search(_args(*argv)) is None  # type: ignore[arg-type]
    code, out, err = _both(capsys, monkeypatch, argv)
    assert (code, out, err) == (1, "", "convstore: DatabaseError: database error: file is not a "
                                       "database\n")  # fmt: skip


def test_the_quick_path_loads_no_sqlalchemy(
    database: tuple[str, str, dict[str, list[str]]],
) -> None:
    url, blobs, _ = database
    probe = (
        "import contextlib, io, json, sys\n"
        "from convstore.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    code = main(['search', 'report', '--url', {url!r}, '--blobs', {blobs!r}])\n"
        "print(json.dumps([code, out.getvalue(), sorted(sys.modules)]))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    code, printed, modules = json.loads(done.stdout.splitlines()[-1])
    assert code == 0 and "⟦report⟧" in printed.lower()
    heavy = ("sqlalchemy", "pydantic", "pydantic_core", "alembic", "aiosqlite", "asyncio")
    assert [m for m in modules if m.split(".")[0] in heavy] == []
    never = (
        "convstore.providers",
        "convstore.model.messages",
        "convstore.store.conversation_store",
    )
    assert [m for m in modules if m.startswith(never)] == []
