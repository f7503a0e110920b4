"""The deterministic benchmark workload shared by every convstore benchmark.

One conversation of ``turns`` turns; each turn is six items: a user message (~200 chars), an
assistant message with two tool calls (~200-byte JSON arguments each), two tool results
(~1 KB each) and an assistant reply (~500 chars). Content is derived from the turn number only,
so every run and every store sees the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import JsonValue

from convstore import JsonOutput, Message, Role, TextPart, ToolCallPart, ToolResultPart

ITEMS_PER_TURN = 6


def _text(seed: int, length: int) -> str:
    words = ("store", "render", "blob", "tool", "result", "turn", "model", "call", "reply")
    out: list[str] = []
    i = seed
    while sum(len(w) + 1 for w in out) < length:
        out.append(words[i % len(words)])
        i = i * 31 + 7
    return " ".join(out)[:length]


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn's plain data, for stores that take their own item shapes."""

    user: str
    calls: tuple[tuple[str, str, dict[str, JsonValue]], ...]
    results: tuple[tuple[str, str], ...]
    reply: str


def turn_data(n: int) -> Turn:
    """The plain data of turn ``n``."""

    def arguments(k: int) -> dict[str, JsonValue]:
        return {"query": _text(n * 7 + k, 120), "limit": 10 + k, "path": f"/data/{n}/{k}.txt"}

    calls = tuple(
        (f"call_{n}_{k}", "search_documents" if k == 0 else "read_file", arguments(k))
        for k in range(2)
    )
    results = tuple((f"call_{n}_{k}", _text(n * 13 + k, 1000)) for k in range(2))
    return Turn(_text(n, 200), calls, results, _text(n * 3, 500))


def turn_messages(n: int) -> list[Message]:
    """Turn ``n`` as five canonical messages (six items)."""
    turn = turn_data(n)
    return [
        Message(role=Role.USER, parts=[TextPart(text=turn.user)]),
        Message(
            role=Role.ASSISTANT,
            parts=[ToolCallPart(id=i, name=name, arguments=args) for i, name, args in turn.calls],
        ),
        *(
            Message(
                role=Role.TOOL,
                parts=[ToolResultPart(call_id=call_id, output=JsonOutput(value=value))],
            )
            for call_id, value in turn.results
        ),
        Message(role=Role.ASSISTANT, parts=[TextPart(text=turn.reply)]),
    ]
