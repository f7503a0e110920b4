"""Run by test_langgraph.py in a new process: resume a thread from its ConvstoreSaver checkpoints.

``python -m tests.integrations.langgraph_resume URL BLOBS THREAD FIRST_TURN LAST_TURN`` runs
the agent's turns FIRST_TURN..LAST_TURN on the thread and prints the final state as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys

from convstore.integrations.langgraph import ConvstoreSaver
from tests.integrations.langgraph_agent import build, config, question, snapshot_json


async def main(url: str, blobs: str, thread_id: str, first: int, last: int) -> None:
    async with ConvstoreSaver(url=url, blobs=blobs) as saver:
        graph = build(saver)
        before = await graph.aget_state(config(thread_id))
        for turn in range(first, last + 1):
            await graph.ainvoke({"messages": [question(turn)]}, config(thread_id))
        after = await graph.aget_state(config(thread_id))
    print(json.dumps({"before": snapshot_json(before), "after": snapshot_json(after)}))


if __name__ == "__main__":
    url, blobs, thread_id, first, last = sys.argv[1:]
    asyncio.run(main(url, blobs, thread_id, int(first), int(last)))
