"""A pydantic-ai save is one transaction: after a SIGKILL mid-save, the old state or the new.

A writer process saves a first run, then a continued run whose save it kills (SIGKILL) the
moment the store executes the statement that writes the record into the conversation's
metadata: the step that used to follow the messages' own commit. Reopened, the database must
hold the first save or the second (the backend's record and convstore's own view of the
conversation agreeing), never new messages under an old record; an unkilled writer stores the
second. Runs on SQLite (file, WAL, ``synchronous=FULL``) and PostgreSQL.
"""

from __future__ import annotations

import signal
import uuid
from pathlib import Path

import pytest

from convstore import ConversationStore
from tests.integrations.pydantic_ai_google_adk_support import (  # noqa: F401 - blobs_url: a fixture
    blobs_url,
    require,
    run_writer,
)

require("pydantic_ai")

from convstore.integrations.pydantic_ai import ConvstoreConversationStore  # noqa: E402

_WRITER = """
import asyncio, os, signal, sys
from pydantic_ai import Agent
from pydantic_ai.conversation import Conversation
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel
from convstore import ConversationStore
from convstore.integrations.pydantic_ai import ConvstoreConversationStore

url, blobs, cid, kill = sys.argv[1:5]
agent = Agent(FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("noted")])))


def kill_at_the_record(sql):
    if "UPDATE conversations SET title" in sql and "metadata" in sql:
        os.kill(os.getpid(), signal.SIGKILL)


async def main():
    async with ConversationStore(url, blobs=blobs) as store:
        backend = ConvstoreConversationStore(store=store)
        first = await agent.run("first", conversation=Conversation(conversation_id=cid))
        await backend.save(first)
        if kill == "1":
            store.backend.add_statement_listener(kill_at_the_record)
            await store.backend.trace_all()
        second = await agent.run("second", conversation=await backend.load(cid))
        await backend.save(second)
    print("stored")


asyncio.run(main())
"""


@pytest.mark.parametrize("kill", [True, False], ids=["killed", "finished"])
async def test_a_save_is_stored_whole_or_not_at_all(
    store: ConversationStore, db_url: str, tmp_path: Path, kill: bool
) -> None:
    cid = f"pai-{uuid.uuid4().hex[:12]}"
    code = run_writer(_WRITER, db_url, str(tmp_path / "blobs"), cid, "1" if kill else "0")
    assert code == (-signal.SIGKILL if kill else 0)

    loaded = await ConvstoreConversationStore(store=store).load(cid)
    assert loaded is not None
    record = await ConvstoreConversationStore(store=store).read_record(cid)
    assert record is not None
    prompts = [
        part.content
        for message in loaded.messages
        for part in getattr(message, "parts", [])
        if getattr(part, "part_kind", None) == "user-prompt"
    ]
    # convstore's view agrees with the record: its active path ends at the record's head entry.
    path = (await store.load(cid)).messages
    assert path[-1].id == record.head_id
    assert [m.text for m in path if m.role.value == "user"] == prompts
    assert prompts == (["first"] if kill else ["first", "second"])
