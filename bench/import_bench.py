"""ChatGPT export import: peak memory and throughput on a generated export of ``--mib`` MiB.

Run from the repository root::

    .venv/bin/python -m bench.import_bench [--mib 200] [--url URL] [--repeat 1] [--callgrind]

Writes a ChatGPT ``conversations.json`` of about ``--mib`` MiB (conversation by conversation,
never held whole): conversations of 10 to 120 nodes with regenerations and edits (a branch
every few turns), code-interpreter calls and outputs, thoughts, hidden system nodes, texts of
realistic lengths, and a few conversations of several MiB. Then imports it with
`convstore.imports.import_file` in a fresh subprocess (SQLite by default, or ``--url``) and
prints the subprocess's peak resident set (target: under 300 MB), its resident set after
imports, and conversations, messages and MiB per second. ``--repeat`` runs the import that
many times on fresh databases and prints each and the median.

``--callgrind`` also counts instructions (valgrind's callgrind) of importing 40 generated
conversations minus importing none, in two processes: instructions per conversation and per
message, stable where wall time on a shared machine is not.

Prints numbers only; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

MiB = 1024 * 1024
_WORDS = [
    "the",
    "a",
    "of",
    "to",
    "and",
    "in",
    "is",
    "it",
    "that",
    "for",
    "you",
    "with",
    "on",
    "as",
    "this",
    "be",
    "are",
    "can",
    "or",
    "we",
    "have",
    "not",
    "but",
    "function",
    "value",
    "data",
    "file",
    "error",
    "list",
    "python",
    "return",
    "import",
    "class",
    "model",
    "time",
    "step",
    "first",
    "then",
    "check",
    "run",
    "test",
    "query",
    "result",
    "use",
    "example",
    "output",
    "input",
    "string",
    "number",
    "table",
    "code",
    "bridge",
    "river",
    "city",
    "walk",
    "train",
    "ticket",
    "museum",
    "morning",
    "evening",
    "coffee",
    "recipe",
    "flour",
    "water",
]


def _text(rng: random.Random, words: int) -> str:
    chosen = rng.choices(_WORDS, k=words)
    sentences = []
    for start in range(0, len(chosen), 14):
        sentence = " ".join(chosen[start : start + 14])
        sentences.append(sentence[:1].upper() + sentence[1:] + ".")
    return " ".join(sentences)


def _message(
    rng: random.Random, key: str, role: str, content: dict[str, Any], clock: float, **extra: Any
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"request_id": uuid.UUID(int=rng.getrandbits(128)).hex[:16]}
    if role == "assistant":
        metadata["model_slug"] = rng.choice(["gpt-4o", "gpt-4o-mini", "o3"])
    if extra.pop("hidden", False):
        metadata["is_visually_hidden_from_conversation"] = True
    return {
        "id": key,
        "author": {"role": role, "name": extra.pop("name", None), "metadata": {}},
        "create_time": clock,
        "update_time": None,
        "content": content,
        "status": "finished_successfully",
        "end_turn": True if role == "assistant" else None,
        "weight": 1.0,
        "metadata": metadata,
        "recipient": extra.pop("recipient", "all"),
        "channel": None,
    }


def conversation(rng: random.Random, turns: int, words: int) -> dict[str, Any]:
    """One conversation of about ``turns`` user turns, answers of about ``words`` words."""

    def new_key() -> str:
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))

    mapping: dict[str, Any] = {}
    clock = 1_700_000_000.0 + rng.random() * 50_000_000

    def add(parent: str | None, message: dict[str, Any] | None, key: str) -> str:
        mapping[key] = {"id": key, "message": message, "parent": parent, "children": []}
        if parent is not None:
            mapping[parent]["children"].append(key)
        return key

    root = add(None, None, new_key())
    k = new_key()
    head = add(
        root,
        _message(rng, k, "system", {"content_type": "text", "parts": [""]}, clock, hidden=True),
        k,
    )
    for _ in range(turns):
        clock += rng.uniform(5, 600)
        k = new_key()
        question = _text(rng, rng.randint(8, 80))
        head = add(
            head, _message(rng, k, "user", {"content_type": "text", "parts": [question]}, clock), k
        )
        user = head
        if rng.random() < 0.15:  # an edit of the question: a sibling under the same parent
            k = new_key()
            parent = mapping[user]["parent"]
            add(
                parent,
                _message(
                    rng,
                    k,
                    "user",
                    {"content_type": "text", "parts": [question + " Edited."]},
                    clock,
                ),
                k,
            )
        if rng.random() < 0.2:
            k = new_key()
            thoughts = {
                "content_type": "thoughts",
                "thoughts": [
                    {"summary": _text(rng, 5), "content": _text(rng, words // 3), "finished": True}
                ],
            }
            head = add(head, _message(rng, k, "assistant", thoughts, clock), k)
        if rng.random() < 0.15:
            k = new_key()
            code = {
                "content_type": "code",
                "language": "unknown",
                "text": "print(sum(range(10)))\n" * rng.randint(1, 20),
            }
            head = add(head, _message(rng, k, "assistant", code, clock, recipient="python"), k)
            k = new_key()
            output = {"content_type": "execution_output", "text": "45\n" * rng.randint(1, 20)}
            head = add(head, _message(rng, k, "tool", output, clock, name="python"), k)
        answers = 2 if rng.random() < 0.2 else 1  # a regeneration: a sibling answer
        parent = head
        for _ in range(answers):
            k = new_key()
            answer = {
                "content_type": "text",
                "parts": [_text(rng, rng.randint(words // 2, words * 2))],
            }
            head = add(parent, _message(rng, k, "assistant", answer, clock + 3), k)
    cid = new_key()
    return {
        "title": _text(rng, 4)[:40],
        "create_time": clock,
        "update_time": clock + 10,
        "mapping": mapping,
        "moderation_results": [],
        "current_node": head,
        "plugin_ids": None,
        "conversation_id": cid,
        "conversation_template_id": None,
        "gizmo_id": None,
        "is_archived": False,
        "safe_urls": [],
        "default_model_slug": "gpt-4o",
        "id": cid,
    }


def write_export(path: Path, mib: float, seed: int = 7) -> tuple[int, int]:
    """Write ``conversations.json`` of about ``mib`` MiB; (conversations, nodes) written."""
    rng = random.Random(seed)
    target = int(mib * MiB)
    written = count = nodes = 0
    with path.open("w", encoding="utf-8") as out:
        out.write("[")
        while written < target:
            large = count % 500 == 250  # now and then a conversation of several MiB
            turns = rng.randint(200, 300) if large else rng.randint(3, 40)
            words = 600 if large else rng.choice([40, 120, 250])
            document = conversation(rng, turns, words)
            text = json.dumps(document, ensure_ascii=False)
            out.write(("," if count else "") + text)
            written += len(text.encode()) + 1
            count += 1
            nodes += len(document["mapping"])
        out.write("]")
    return count, nodes


_CHILD = """
import asyncio, json, sys, time
from pathlib import Path
from bench.blobs_bench import peak_rss_bytes

async def main(url, blobs, export):
    from convstore import ConversationStore
    from convstore.imports import import_file
    async with ConversationStore(url, blobs=blobs, auto_migrate=True) as store:
        baseline = peak_rss_bytes()
        started = time.perf_counter()
        report = await import_file(store, export, "chatgpt-export")
        seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "peak": peak_rss_bytes(), "baseline": baseline,
                      "conversations": report.imported["conversation"],
                      "messages": report.imported["message"], "errors": len(report.errors)}))

asyncio.run(main(*sys.argv[1:4]))
"""


def run_import(url: str, blobs: str, export: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, url, blobs, str(export)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def callgrind_counts(directory: Path, conversations: int) -> tuple[int, int]:
    """Instructions of a whole process importing ``conversations`` generated conversations,
    and the messages they hold."""
    export = directory / f"cg{conversations}"
    export.mkdir()
    rng = random.Random(11)
    docs = [conversation(rng, rng.randint(3, 40), 120) for _ in range(conversations)]
    messages = sum(len(d["mapping"]) for d in docs)
    (export / "conversations.json").write_text(json.dumps(docs))
    out = directory / f"callgrind.{conversations}.out"
    subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            "-c",
            _CHILD,
            f"sqlite+aiosqlite:///{directory / f'cg{conversations}.db'}",
            f"file://{directory / f'b{conversations}'}",
            str(export),
        ],
        check=True,
        capture_output=True,
    )
    found = re.search(r"^(?:summary|totals):\s+(\d+)", out.read_text(), re.MULTILINE)
    return (int(found.group(1)) if found else 0), messages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mib", type=float, default=200)
    parser.add_argument("--url", help="database URL (default: a fresh SQLite file per run)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--callgrind", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="convstore-import-bench-") as tmp:
        directory = Path(tmp)
        export = directory / "export"
        export.mkdir()
        started = time.perf_counter()
        count, nodes = write_export(export / "conversations.json", args.mib)
        size = (export / "conversations.json").stat().st_size
        print(
            f"export: {size / MiB:.1f} MiB, {count:,} conversations, {nodes:,} nodes "
            f"(generated in {time.perf_counter() - started:.1f} s)"
        )
        rates = []
        for run in range(args.repeat):
            url = args.url or f"sqlite+aiosqlite:///{directory / f'run{run}.db'}"
            result = run_import(url, f"file://{directory / f'blobs{run}'}", export)
            rates.append(result["conversations"] / result["seconds"])
            print(
                f"run {run + 1}: peak RSS {result['peak'] / MiB:.0f} MiB (after imports "
                f"{result['baseline'] / MiB:.0f} MiB), {result['seconds']:.1f} s, "
                f"{rates[-1]:.0f} conversations/s, {result['messages'] / result['seconds']:,.0f} "
                f"messages/s, {size / MiB / result['seconds']:.1f} MiB/s, "
                f"{result['conversations']:,} conversations, {result['messages']:,} messages, "
                f"{result['errors']} errors"
            )
            if args.url:
                break  # a given database is not fresh for a second run
        print(f"median: {statistics.median(rates):.0f} conversations/s")
        if args.callgrind:
            if shutil.which("valgrind") is None:
                print("callgrind: valgrind is not installed")
                return
            (none, _), (some, messages) = (
                callgrind_counts(directory, 0),
                callgrind_counts(directory, 40),
            )
            print(
                f"callgrind: {(some - none) / 40:,.0f} instructions per conversation, "
                f"{(some - none) / messages:,.0f} per message "
                f"(40 conversations, {messages} messages)"
            )


if __name__ == "__main__":
    main()
