"""langchain-community ``SQLChatMessageHistory``: one JSON row per LangChain message.

A turn is one ``add_messages`` call (one transaction) with five messages: ``HumanMessage``,
``AIMessage`` with two ``tool_calls``, two ``ToolMessage`` and the ``AIMessage`` reply. Full
load is the ``messages`` property. The class has no API for the newest N messages, so last-50
is n/a. It is the synchronous API (the one the history documents first), on one SQLAlchemy
``Engine`` (pysqlite) shared by every conversation's history object; the table is created when
a history is constructed, before timing.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bench.peers.runner import Peer, main
from bench.workload import turn_data

PEER = Peer(
    name="langchain_sql",
    label="langchain-community SQLChatMessageHistory",
    packages=("langchain-community", "langchain-core", "sqlalchemy"),
    unit="messages",
    records_per_turn=5,
    append_api="1 x add_messages (5 messages)",
    load_api=".messages",
    last_api=None,
    shape="LangChain messages (message_to_dict), one JSON text row each",
    durability="sets nothing: journal mode and synchronous are SQLite defaults",
    requests=".messages + convert_to_openai_messages + json.dumps (Chat Completions)",
)


class _Store:
    def __init__(self, engine: Any) -> None:
        self._engine = engine

    def payload(self, turn: int) -> list[Any]:
        from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

        data = turn_data(turn)
        return [
            HumanMessage(content=data.user),
            AIMessage(
                content="",
                tool_calls=[
                    {"id": call_id, "name": name, "args": arguments, "type": "tool_call"}
                    for call_id, name, arguments in data.calls
                ],
            ),
            *(
                ToolMessage(content=output, tool_call_id=call_id)
                for call_id, output in data.results
            ),
            AIMessage(content=data.reply),
        ]

    def new_conversation(self, key: str) -> Any:
        from langchain_community.chat_message_histories import SQLChatMessageHistory

        return SQLChatMessageHistory(session_id=key, connection=self._engine)

    def append_turn(self, conversation: Any, payload: list[Any]) -> None:
        conversation.add_messages(payload)

    def load_all(self, conversation: Any) -> int:
        return len(conversation.messages)

    def load_last(self, conversation: Any, n: int) -> int:
        raise NotImplementedError("SQLChatMessageHistory has no API for the newest N messages")

    def request(self, conversation: Any, last: int | None) -> int:
        from langchain_core.messages import convert_to_openai_messages

        assert last is None, "SQLChatMessageHistory has no API for the newest N messages"
        messages = convert_to_openai_messages(conversation.messages)
        json.dumps({"model": "gpt-5", "messages": messages})
        # Chat Completions carries a turn's two calls in one message: count them as items.
        return sum(len(m.get("tool_calls", ())) or 1 for m in messages)


@asynccontextmanager
async def open_store(path: Path) -> AsyncIterator[_Store]:
    """One synchronous engine on ``path``, disposed on exit."""
    from langchain_community.chat_message_histories import SQLChatMessageHistory  # noqa: F401
    from sqlalchemy import create_engine

    engine = create_engine(f"sqlite:///{path}")
    try:
        yield _Store(engine)
    finally:
        engine.dispose()


if __name__ == "__main__":
    main(PEER, open_store)
