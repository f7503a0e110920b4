"""pytest plugin: openai-agents' own session tests, run unmodified against ConvstoreSession.

Loaded with ``-p convstore_swap`` by ``tests/integrations/test_openai_agents_contract.py``, which
runs the test files of the openai-agents sdist. Before those files are imported, the plugin
replaces the SDK's ``SQLiteSession`` (and the in-memory ``SimpleListSession`` of the SDK's test
utilities) with classes that take the same constructor arguments and are `ConvstoreSession`s on
a convstore database. Tests of SQLiteSession's own machinery are deselected, each with its
reason (`EXCLUDED`), and reported.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from convstore.integrations.openai_agents import ConvstoreSession

_SCRATCH = Path(tempfile.mkdtemp(prefix="convstore-agents-contract-"))
_COUNTER = itertools.count()

_THREADS = "SQLiteSession's per-thread sqlite3 connection pool"
_CORRUPT = "writes corrupt JSON straight into SQLiteSession's agent_messages table"
_RAW = "probes SQLiteSession's own tables and write lock with a raw sqlite3 connection"
_PATCHED = "monkeypatches SQLiteSession's private connection methods"

EXCLUDED: dict[str, str] = {
    "test_sqlite_session_close_closes_worker_thread_connections": _THREADS,
    "test_sqlite_session_reaps_connections_from_exited_worker_threads": _THREADS,
    "test_sqlite_session_closes_retired_connections_before_the_next_allocation": _THREADS,
    "test_sqlite_session_keeps_connections_of_live_worker_threads": _THREADS,
    "test_sqlite_session_closed_rejects_empty_add_items": (
        "asserts SQLiteSession's RuntimeError text for a closed connection; a ConvstoreSession "
        "reopens its store on the next use"
    ),
    "test_sqlite_session_pop_item_skips_corrupt_most_recent": _CORRUPT,
    "test_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows": _CORRUPT,
    "test_sqlite_session_get_items_limit_skips_corrupt_newest_rows": _CORRUPT,
    "test_sqlite_session_get_items_session_settings_limit_skips_corrupt_rows": _CORRUPT,
    "test_sqlite_session_file_lock_is_shared_across_instances": (
        "SQLiteSession's class-level file lock registry"
    ),
    "test_sqlite_session_failed_add_items_releases_write_lock": _RAW,
    "test_sqlite_session_failed_clear_session_rolls_back": _RAW,
    "test_sqlite_session_failed_pop_item_releases_write_lock": _RAW,
    "test_sqlite_session_rollback_failure_evicts_connection": _PATCHED,
    "test_sqlite_session_close_retries_quarantined_connection": _PATCHED,
    "test_sqlite_session_post_commit_cancellation_propagates_after_known_outcome": _PATCHED,
    "test_openai_conversations_session_hitl_scenario": (
        "exercises the hosted OpenAIConversationsSession against a fake Conversations API; "
        "no local session class to swap"
    ),
}


# Sessions built per swapped class: the runner checks the swap took effect.
CREATED: dict[str, int] = {}


def _created(cls: type) -> None:
    CREATED[cls.__name__] = CREATED.get(cls.__name__, 0) + 1


def _fresh_url() -> str:
    return f"sqlite+aiosqlite:///{_SCRATCH / f'session-{next(_COUNTER)}.db'}"


class SQLiteSessionOnConvstore(ConvstoreSession):
    """Built like ``SQLiteSession(session_id, db_path=":memory:", session_settings=None)``."""

    def __init__(
        self,
        session_id: str,
        db_path: str | Path = ":memory:",
        session_settings: Any = None,
    ) -> None:
        # One database per file path, as with SQLiteSession; ":memory:" is private to the
        # instance, so it gets a fresh file.
        url = _fresh_url() if str(db_path) == ":memory:" else f"sqlite+aiosqlite:///{db_path}"
        super().__init__(session_id, url=url, session_settings=session_settings)
        self.db_path = db_path
        _created(SQLiteSessionOnConvstore)


class ListSessionOnConvstore(ConvstoreSession):
    """Built like the SDK tests' ``SimpleListSession(session_id, history)``: a private history."""

    def __init__(self, session_id: str = "test", history: list[Any] | None = None) -> None:
        super().__init__(session_id, url=_fresh_url())
        self._seed = list(history or [])
        _created(ListSessionOnConvstore)

    async def _seeded(self, wrapper: Any) -> None:
        if self._seed:
            seed, self._seed = self._seed, []
            await ConvstoreSession.add_items(self, seed, wrapper=wrapper)

    async def get_items(self, limit: int | None = None, *, wrapper: Any = None) -> list[Any]:
        await self._seeded(wrapper)
        return await super().get_items(limit, wrapper=wrapper)

    async def add_items(self, items: list[Any], *, wrapper: Any = None) -> None:
        await self._seeded(wrapper)
        await super().add_items(items, wrapper=wrapper)

    async def pop_item(self, *, wrapper: Any = None) -> Any:
        await self._seeded(wrapper)
        return await super().pop_item(wrapper=wrapper)

    async def clear_session(self, *, wrapper: Any = None) -> None:
        self._seed = []
        await super().clear_session(wrapper=wrapper)


def pytest_configure(config: pytest.Config) -> None:
    """Swap the session classes before any test module imports them."""
    import agents
    import agents.memory
    import agents.memory.sqlite_session

    for module in (agents, agents.memory, agents.memory.sqlite_session):
        module.SQLiteSession = SQLiteSessionOnConvstore  # type: ignore[attr-defined]

    import tests.utils.simple_session as simple  # the sdist's test utilities

    simple.SimpleListSession = ListSessionOnConvstore  # type: ignore[misc]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the SQLiteSession-internals tests, reporting each with its reason."""
    kept, dropped = [], []
    for item in items:
        name = item.name.split("[", 1)[0]
        (dropped if name in EXCLUDED else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """List every excluded test and why, and how many swapped sessions the tests built."""
    terminalreporter.section("convstore sessions built")
    for name, count in sorted(CREATED.items()):
        terminalreporter.write_line(f"{name}: {count}")
    terminalreporter.section("excluded: SQLiteSession internals (convstore_swap.EXCLUDED)")
    for name, reason in EXCLUDED.items():
        terminalreporter.write_line(f"{name}: {reason}")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the sessions' databases (the scratch directory would outlive the run)."""
    shutil.rmtree(_SCRATCH, ignore_errors=True)
