"""Responses-API input items: what openai-agents sessions store, and what the raw floor writes.

The openai-agents runner saves a turn as the user input (``{"content": ..., "role": "user"}``),
then each output item as ``model_dump(exclude_unset=True)`` of the Responses type
(``function_call`` with ``id`` and ``status``; the assistant ``message`` with its
``output_text`` content), and each tool result as a ``function_call_output`` item (see
``agents.items``: ``_output_item_to_input_item`` and ``ItemHelpers.tool_call_output_item``).
`responses_items` builds the same six dicts from `bench.workload.turn_data`, so
``SQLiteSession``, ``SQLAlchemySession`` and the raw sqlite3 floor store the same bytes.
"""

from __future__ import annotations

import json
from typing import Any

from bench.workload import turn_data


def responses_items(turn: int) -> list[dict[str, Any]]:
    """Turn ``turn`` as six Responses-API input items."""
    data = turn_data(turn)
    return [
        {"content": data.user, "role": "user"},
        *(
            {
                "arguments": json.dumps(arguments),
                "call_id": call_id,
                "name": name,
                "type": "function_call",
                "id": f"fc_{call_id}",
                "status": "completed",
            }
            for call_id, name, arguments in data.calls
        ),
        *(
            {"call_id": call_id, "output": output, "type": "function_call_output"}
            for call_id, output in data.results
        ),
        {
            "id": f"msg_{turn}",
            "content": [
                {"annotations": [], "text": data.reply, "type": "output_text", "logprobs": []}
            ],
            "role": "assistant",
            "status": "completed",
            "type": "message",
        },
    ]


def agents_request(items: list[Any], model: str = "gpt-5") -> int:
    """The Responses request body openai-agents builds from session items; how many it holds.

    ``OpenAIResponsesModel`` passes the history through `ItemHelpers.input_to_new_input_list`
    before the SDK serialises it; the Runner's own per-item clean-up before that is left out,
    so this is a lower bound of the SDK's work per turn.
    """
    from agents.items import ItemHelpers

    input_items = ItemHelpers.input_to_new_input_list(items)
    json.dumps({"model": model, "input": input_items})
    return len(input_items)
