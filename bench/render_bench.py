"""Rendering a 3,000-item history for every target, beside the store's full-load time.

Run: ``.venv/bin/python -m bench.render_bench [--reps 7] [--json-out FILE]``
(`bench.compare` runs it too and adds its table to ``docs/performance.md``).

The history is the benchmark workload (`bench.workload`): 500 turns, 2,500 messages, 3,000
items; in four of the turns the first tool result is a `ContentOutput` holding its text and a
~100 KB PNG (`FilePart`; made here from deterministic noise, so incompressible: no image
library is needed, and the renderer treats PNG and JPEG bytes alike). It is appended turn by
turn to a default `ConversationStore` on a fresh SQLite file, then:

- full load: ``store.load(id)``;
- render: ``convstore.render(conversation, target, model=..., attachments=...)`` on the loaded
  conversation with every attachment prefetched: pure CPU;
- ``store.render(id, target, model=...)``: end to end (load, fetch the attachments the target
  inlines from the blob store, verify their hashes, render).

Each is warmed up once, then timed ``--reps`` times, interleaved: every round calls each of
them once in turn, each after a ``gc.collect()`` (the previous result is already dropped), so
the load and every render see the same heap and the same neighbours on a shared machine; GC
stays enabled during the call, so each pays for collecting its own garbage. Medians.

Both renders of a target must produce the same payload (checked once, untimed): that shows
the prefetched attachments are the ones the store would fetch. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import statistics
import struct
import tempfile
import time
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench.workload import ITEMS_PER_TURN, turn_data, turn_messages
from convstore import (
    ContentOutput,
    Conversation,
    ConversationStore,
    FilePart,
    Message,
    Role,
    TextPart,
    ToolResultPart,
    render,
)

TURNS = 500
IMAGE_TURNS = (60, 180, 300, 420)
"""Turns whose first tool result carries an image."""
IMAGE_SIDE = 184
"""Pixels per side of the RGB noise images: 184 x 184 x 3 bytes ≈ 100 KB, incompressible."""

TARGETS: tuple[tuple[str, str], ...] = (
    ("openai-chat", "gpt-5"),
    ("openai-responses", "gpt-5"),
    ("anthropic", "claude-sonnet-4-5"),
    ("gemini", "gemini-3-pro-preview"),
    ("gemini", "gemini-2.5-flash"),
    ("mistral", "mistral-medium-latest"),
    ("kimi", "kimi-k2-thinking"),
)


def noise_png(seed: int, side: int = IMAGE_SIDE) -> bytes:
    """A valid RGB PNG of deterministic noise (stdlib only)."""
    rng = random.Random(seed)
    raw = b"".join(b"\x00" + rng.randbytes(side * 3) for _ in range(side))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def history_turn(n: int) -> list[Message]:
    """Turn ``n`` of the workload; in `IMAGE_TURNS` the first result also carries a PNG."""
    messages = turn_messages(n)
    if n in IMAGE_TURNS:
        call_id, text = turn_data(n).results[0]
        output = ContentOutput(
            parts=[TextPart(text=text), FilePart.from_bytes(noise_png(n), filename=f"{n}.png")]
        )
        result = ToolResultPart(call_id=call_id, output=output)
        messages[2] = Message(role=Role.TOOL, parts=[result])
    return messages


def _stored_files(conversation: Conversation) -> list[FilePart]:
    return [f for m in conversation.messages for f in m.files if f.attachment is not None]


async def _interleaved(
    calls: dict[str, Callable[[], Awaitable[Any]]], reps: int
) -> dict[str, list[float]]:
    """Milliseconds per call of each of ``calls``: ``reps`` rounds, each calling all in turn."""
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(reps):
        for name, call in calls.items():
            gc.collect()
            start = time.perf_counter()
            await call()
            samples[name].append((time.perf_counter() - start) * 1e3)
    return samples


def _spread(samples: list[float]) -> dict[str, float]:
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples)}


async def run(reps: int, tmpdir: str | None = None, turns: int = TURNS) -> dict[str, Any]:
    """Build the history in a fresh store and time loading and rendering it."""
    with tempfile.TemporaryDirectory(prefix="bench-render-", dir=tmpdir) as tmp:
        async with ConversationStore(f"sqlite+aiosqlite:///{Path(tmp) / 'render.db'}") as store:
            conv = await store.create_conversation(title="render bench")
            for n in range(turns):
                await store.append(conv.id, history_turn(n))
            conversation = await store.load(conv.id)
            files = _stored_files(conversation)
            attachments = {
                f.attachment.sha256: await store.read_attachment(f)
                for f in files
                if f.attachment is not None
            }
            calls: dict[str, Callable[[], Awaitable[Any]]] = {"load": lambda: store.load(conv.id)}
            payload_bytes: dict[tuple[str, str], int] = {}
            for target, model in TARGETS:

                async def pure(target: str = target, model: str = model) -> Any:
                    return render(conversation, target, model=model, attachments=attachments)

                async def end_to_end(target: str = target, model: str = model) -> Any:
                    return await store.render(conv.id, target, model=model)

                payload = (await pure()).payload  # also the warm-up of both
                if payload != (await end_to_end()).payload:
                    raise AssertionError(f"{target}/{model}: pure and store renders differ")
                payload_bytes[target, model] = len(json.dumps(payload))
                del payload
                calls[f"render {target} {model}"] = pure
                calls[f"store.render {target} {model}"] = end_to_end
            await store.load(conv.id)  # warm-up
            samples = await _interleaved(calls, reps)
            rows = [
                {
                    "target": target,
                    "model": model,
                    "render_ms": _spread(samples[f"render {target} {model}"]),
                    "store_render_ms": _spread(samples[f"store.render {target} {model}"]),
                    "payload_bytes": payload_bytes[target, model],
                }
                for target, model in TARGETS
            ]
    return {
        "turns": turns,
        "messages": len(conversation.messages),
        "items": turns * ITEMS_PER_TURN,
        "images": [len(data) for data in attachments.values()],
        "reps": reps,
        "full_load_ms": _spread(samples["load"]),
        "targets": rows,
    }


def markdown(result: dict[str, Any]) -> str:
    """The result as a Markdown table with a one-line preface."""
    load = result["full_load_ms"]
    kb = ", ".join(f"{size / 1000:.0f} KB" for size in result["images"])
    lines = [
        f"History: {result['turns']} turns, {result['messages']:,} messages, "
        f"{result['items']:,} items, {len(result['images'])} PNG attachments ({kb}). "
        f"Full load `store.load(id)`: **{load['median']:.1f} ms** "
        f"[{load['min']:.1f}-{load['max']:.1f}]. Medians of {result['reps']} runs [min-max].",
        "",
        "| target | model | `convstore.render` ms (attachments prefetched) "
        "| `store.render` ms (load + blobs + render) | payload (JSON) |",
        "|---|---|---:|---:|---:|",
    ]
    for row in result["targets"]:
        pure, e2e = row["render_ms"], row["store_render_ms"]
        lines.append(
            f"| {row['target']} | {row['model']} "
            f"| {pure['median']:.1f} [{pure['min']:.1f}-{pure['max']:.1f}] "
            f"| {e2e['median']:.1f} [{e2e['min']:.1f}-{e2e['max']:.1f}] "
            f"| {row['payload_bytes'] / 1e6:.2f} MB |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7, help="timed rounds (7)")
    parser.add_argument("--turns", type=int, default=TURNS, help=f"history turns ({TURNS})")
    parser.add_argument("--tmpdir", help="where the fresh database goes")
    parser.add_argument("--json-out", type=Path, help="also write the result as JSON here")
    args = parser.parse_args()
    result = asyncio.run(run(args.reps, args.tmpdir, args.turns))
    if args.json_out is not None:
        args.json_out.write_text(json.dumps(result, indent=1))
    print(markdown(result))


if __name__ == "__main__":
    main()
