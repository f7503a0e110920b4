"""Corpus-seeded mutation of provider JSON: the one mutator behind every fuzz driver.

`tests/reliability/test_fuzz.py` drives it with hypothesis (derandomised, counted, in CI), the
provider suites through `mutants` (mutated payloads of their own, rendered and validated too),
and `tests/fuzz/atheris_parse.py` with atheris (coverage-guided, by hand). A run starts from a real
request or response body a provider accepted (``tests/corpus``), copies it, and applies one to
four operations at random nodes:

==========  ===========================================================================
operation   what it does
==========  ===========================================================================
delete      removes an object key or an array item
retype      swaps a value's type (str <-> int <-> float <-> list <-> dict <-> null <-> bool)
truncate    cuts a string short (base64 and ``data:`` URLs included)
garble      overwrites a slice of a string with junk (base64 padding, ``%``, spaces, ...)
encoding    damages base64 and ``data:`` URLs: header, media type, alphabet, padding
duplicate   repeats an array item
reorder     swaps, reverses or rotates an array
unicode     injects NUL, lone surrogates, RTL/bidi marks, BOM, emoji, combining marks
nest        wraps a value in 3 to 1,500 levels of arrays or objects
huge        replaces a string with a 70 kB to 1.2 MB one
splice      replaces a node with a copy of another node of the same document
vocab       sets a ``type``/``role``/media-type field to another value the format uses
rename      renames a key to another key the format uses (camelCase <-> snake_case ...)
number      puts an extreme number: 2**63, -1, 1e308, NaN, infinity, -0.0
==========  ===========================================================================

Randomness comes from a `Chooser`, so each driver supplies its own (hypothesis draws, atheris'
`FuzzedDataProvider`, `random.Random`); the mutator itself is deterministic given the choices.
It never builds cycles (copies are iterative, so nesting deeper than Python's recursion limit is
safe to build) and records every operation in `Mutant.log`, which is the reproducer a failure
reports.
"""

from __future__ import annotations

import json
import marshal
import random
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, Final, Protocol

from tests.support.corpus import CORPUS_DIR

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

__all__ = [
    "KINDS",
    "OPERATIONS",
    "SOURCES",
    "Chooser",
    "Mutant",
    "RandomChooser",
    "Seed",
    "mutants",
    "mutate",
    "seeds",
]

SOURCES: Final = ("openai-chat", "openai-responses", "anthropic", "gemini")
"""Every `convstore.parse` source."""
KINDS: Final = ("request", "response")
"""``request`` feeds `convstore.parse`, ``response`` feeds `convstore.parse_response`."""

_API_SOURCE: Final = {"mistral": "openai-chat"}  # Mistral histories parse as Chat Completions


class Chooser(Protocol):
    """Where a driver's randomness comes from."""

    def integer(self, low: int, high: int) -> int:
        """An integer in ``[low, high]`` (both included)."""
        ...


class RandomChooser:
    """Choices from a seeded `random.Random`."""

    def __init__(self, seed: int | random.Random) -> None:
        self.random = seed if isinstance(seed, random.Random) else random.Random(seed)

    def integer(self, low: int, high: int) -> int:
        return self.random.randint(low, high)


def _pick(choose: Chooser, items: Sequence[Any]) -> Any:
    return items[choose.integer(0, len(items) - 1)]


@dataclass(frozen=True)
class Seed:
    """One real payload to mutate."""

    name: str
    """Corpus record (file stem)."""
    source: str
    """The `convstore.parse` source it is read as."""
    kind: str
    """``request`` or ``response``."""
    model: str | None
    """The model the request was sent to (Gemini bodies do not name it)."""
    payload: Any


@dataclass
class Mutant:
    """A mutated payload and how it was made."""

    seed: Seed
    payload: Any
    log: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """A reproducer: the seed and every operation applied to it, in order."""
        steps = "; ".join(self.log) or "(no change)"
        return f"{self.seed.source} {self.seed.kind} of {self.seed.name}: {steps}"


@cache
def seeds() -> dict[tuple[str, str], tuple[Seed, ...]]:
    """The corpus payloads by (source, kind), in file-name order."""
    found: dict[tuple[str, str], list[Seed]] = defaultdict(list)
    for path in sorted(CORPUS_DIR.glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        source = _API_SOURCE.get(record["api"], record["api"])
        for kind in KINDS:
            if isinstance(record.get(kind), dict):
                found[source, kind].append(
                    Seed(path.stem, source, kind, record.get("model"), record[kind])
                )
    return {key: tuple(value) for key, value in found.items()}


@cache
def _vocabulary(source: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(enum-like string values, object keys) the source's corpus payloads use."""
    values: set[str] = set(_EXTRA_VALUES)
    keys: set[str] = set()
    for kind in KINDS:
        for seed in seeds().get((source, kind), ()):
            for _, key, value in _nodes(seed.payload, max_depth=64):
                if isinstance(key, str):
                    keys.add(key)
                    if key in _ENUM_KEYS and isinstance(value, str) and len(value) < 64:
                        values.add(value)
    return tuple(sorted(values)), tuple(sorted(keys))


_ENUM_KEYS: Final = frozenset(
    {"type", "role", "mimeType", "mime_type", "media_type", "status", "detail", "format"}
)
_EXTRA_VALUES: Final = (
    # Values each format defines that the corpus may not show: they reach rarer branches.
    *("system", "developer", "user", "assistant", "tool", "function", "model", "bogus"),
    *("text", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking"),
    *("server_tool_use", "web_search_tool_result", "search_result", "container_upload"),
    *("base64", "url", "file", "content"),
    *("input_text", "input_image", "input_file", "input_audio", "output_text", "refusal"),
    *("message", "reasoning", "function_call", "function_call_output", "item_reference"),
    *("summary_text", "reasoning_text", "image_url", "file_url", "document_url"),
    *("image/png", "image/jpeg", "image/webp", "image/gif", "application/pdf", "text/plain"),
    *("audio/wav", "application/octet-stream", "IMAGE/PNG; charset=x", "", " "),
)
_JUNK: Final = "=-_%+/ \n\t\\\"',;:{}[]!~#\u00e9\u4e2d"
_UNICODE: Final = (
    "\x00",
    "\ud800",
    "\udfff",
    "\udc00\ud800",
    "\u202e",
    "\u200f",
    "\u2066",
    "\ufeff",
    "\U0001f600",
    "e\u0301",
    "\x1b[31m",
    "\r\n",
    "\u0000\u0000",
)
_NUMBERS: Final = (2**63, -(2**63) - 1, -1, 0, 1e308, -0.0, 0.5, float("nan"), float("inf"))
_NEST_DEPTHS: Final = (3, 50, 300, 1500)
_HUGE_SIZES: Final = (70_000, 1_200_000)
_BASE64_CHARS: Final = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="
)

OPERATIONS: Final = (
    "delete",
    "retype",
    "truncate",
    "garble",
    "encoding",
    "duplicate",
    "reorder",
    "unicode",
    "nest",
    "huge",
    "splice",
    "vocab",
    "rename",
    "number",
)
# How often each operation is picked (``huge`` is rare: it is the slow one).
_WEIGHTED: Final = tuple(
    op
    for op, weight in (
        ("delete", 6),
        ("retype", 6),
        ("truncate", 3),
        ("garble", 3),
        ("encoding", 4),
        ("duplicate", 3),
        ("reorder", 3),
        ("unicode", 4),
        ("nest", 2),
        ("huge", 1),
        ("splice", 4),
        ("vocab", 6),
        ("rename", 3),
        ("number", 2),
    )
    for _ in range(weight)
)
_MAX_WALK_DEPTH: Final = 24  # paths are chosen among nodes this shallow (nesting stays cheap)

Path = tuple[Any, ...]


def _nodes(
    value: Any, *, max_depth: int = _MAX_WALK_DEPTH, path: Path = (), key: Any = None
) -> Iterator[tuple[Path, Any, Any]]:
    """(path, last key, value) of every node down to ``max_depth``, root first, iteratively.

    ``path`` and ``key`` place ``value`` inside a larger document (a subtree walked again).
    """
    stack: list[tuple[Path, Any, Any]] = [(path, key, value)]
    while stack:
        path, key, node = stack.pop()
        yield path, key, node
        if len(path) >= max_depth:
            continue
        if isinstance(node, dict):
            children = [((*path, k), k, v) for k, v in node.items()]
        elif isinstance(node, list):
            children = [((*path, i), i, v) for i, v in enumerate(node)]
        else:
            continue
        stack.extend(reversed(children))


@dataclass(frozen=True)
class _SeedWalk:
    """A seed payload walked once: its nodes (`_nodes` order), each one's parent, its keys."""

    nodes: list[tuple[Path, Any, Any]]
    parents: list[int]
    """Index in ``nodes`` of each node's parent (-1 for the root)."""
    keys: tuple[str, ...]
    """The object keys the payload uses, sorted."""

    def copy(self) -> tuple[Any, list[tuple[Path, Any, Any]]]:
        """A deep copy of the payload and its nodes (the copy's own objects).

        Equal to ``copy_json(payload)`` and then ``list(_nodes(copy))``, at a fraction of the
        cost: every mutant starts from this. marshal's format 2 has no shared references, so
        the copy shares no containers (with the seed or within itself), like `copy_json`.
        """
        nodes, parents = self.nodes, self.parents
        root = nodes[0][2]
        try:
            payload = marshal.loads(marshal.dumps(root, 2))
        except ValueError:  # nested deeper than marshal goes
            payload = copy_json(root)
        made = [payload]
        for i in range(1, len(nodes)):  # each node of the copy from its parent, by key
            made.append(made[parents[i]][nodes[i][1]])
        return payload, [(path, key, new) for (path, key, _), new in zip(nodes, made, strict=True)]


_SEED_WALKS: dict[int, tuple[Seed, _SeedWalk]] = {}


def _seed_walk(seed: Seed) -> _SeedWalk:
    """`_SeedWalk` of ``seed``, made once per seed (seeds hold dicts: cached by identity)."""
    cached = _SEED_WALKS.get(id(seed))
    if cached is not None and cached[0] is seed:
        return cached[1]
    nodes = list(_nodes(seed.payload))
    index = {path: i for i, (path, _, _) in enumerate(nodes)}
    walk = _SeedWalk(
        nodes,
        [index[path[:-1]] if path else -1 for path, _, _ in nodes],
        tuple(sorted({k for _, k, _ in nodes if isinstance(k, str)})),
    )
    if len(_SEED_WALKS) >= 256:
        _SEED_WALKS.clear()
    _SEED_WALKS[id(seed)] = (seed, walk)  # the seed kept alive: its id is not reused
    return walk


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON value, without recursion (safe at any nesting depth)."""
    if not isinstance(value, dict | list):
        return value
    root: Any = {} if isinstance(value, dict) else []
    stack = [(value, root)]
    while stack:
        source, target = stack.pop()
        pairs = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in pairs:
            new = item
            if isinstance(item, dict | list):
                new = {} if isinstance(item, dict) else []
                stack.append((item, new))
            if isinstance(target, dict):
                target[key] = new
            else:
                target.append(new)
    return root


def _parent(document: Any, path: Path) -> Any:
    node = document
    for step in path[:-1]:
        node = node[step]
    return node


class _Mutation:
    """One mutation run over a private copy of a seed.

    ``walk`` is ``list(_nodes(payload))`` at all times, kept up to date by the operations (each
    walks again only the subtree it changed) rather than walked anew for every operation.
    """

    def __init__(self, mutant: Mutant, choose: Chooser, walk: list[tuple[Path, Any, Any]],
                 seed_keys: tuple[str, ...]) -> None:  # fmt: skip
        self.mutant = mutant
        self.choose = choose
        self.walk = walk
        self.values, self.keys = _vocabulary(mutant.seed.source)
        if not self.keys:  # a format the corpus does not hold (an export): the seed's own keys
            self.keys = seed_keys

    def pick(self, items: Sequence[Any]) -> Any:
        return _pick(self.choose, items)

    def chance(self, one_in: int) -> bool:
        return self.choose.integer(1, one_in) == 1

    def nodes(self, want: type | tuple[type, ...] | None = None) -> list[tuple[Path, Any]]:
        return [
            (path, value) for path, _, value in self.walk if want is None or isinstance(value, want)
        ]

    def changed(self, path: Path) -> None:
        """Walk the subtree at ``path`` again (its node or its children were changed)."""
        path = path[:_MAX_WALK_DEPTH]  # deeper nodes are not walked: their ancestor is
        walk = self.walk
        n = len(path)
        start = next(i for i, (p, _, _) in enumerate(walk) if len(p) == n and p == path)
        end = start + 1
        while end < len(walk) and len(walk[end][0]) > n:  # the subtree: what follows, deeper
            end += 1
        node = self.mutant.payload
        for step in path:
            node = node[step]
        walk[start:end] = _nodes(node, path=path, key=walk[start][1])

    def set(self, path: Path, value: Any) -> None:
        if not path:
            self.mutant.payload = value
            self.walk = list(_nodes(value))
            return
        parent = _parent(self.mutant.payload, path)
        new_key = isinstance(parent, dict) and path[-1] not in parent
        parent[path[-1]] = value
        self.changed(path[:-1] if new_key else path)

    def log(self, op: str, path: Path, detail: str = "") -> None:
        where = "$" + "".join(f"[{step!r}]" for step in path)
        self.mutant.log.append(f"{op} {where}{' ' + detail if detail else ''}")

    def apply(self, op: str) -> None:
        getattr(self, f"op_{op}")()

    # -- operations ------------------------------------------------------------------------------

    def op_delete(self) -> None:
        targets = [(p, v) for p, v in self.nodes() if p]
        if not targets:
            return
        path, _ = self.pick(targets)
        parent = _parent(self.mutant.payload, path)
        del parent[path[-1]]
        self.changed(path[:-1])
        self.log("delete", path)

    def op_retype(self) -> None:
        path, value = self.pick(self.nodes())
        options: list[Any] = [
            None,
            True,
            False,
            0,
            -1,
            1.5,
            "",
            "x",
            [],
            {},
            [{}],
            {"type": "text"},
        ]
        match value:
            case str():
                options += [len(value), [value], {"text": value}, value.isdigit()]
            case bool() | int() | float():
                options += [str(value), [value], {"value": value}]
            case list():
                options += [{str(i): item for i, item in enumerate(value)}, json.dumps(len(value))]
                options += [value[0] if value else None]
            case dict():
                options += [list(value.values()), list(value), json.dumps(list(value))]
        replacement = copy_json(self.pick(options))
        self.set(path, replacement)
        self.log("retype", path, f"-> {_short(replacement)}")

    def op_truncate(self) -> None:
        strings = self.nodes(str)
        if not strings:
            return self.op_delete()
        path, value = self.pick(strings)
        cut = self.choose.integer(0, max(0, len(value) - 1))
        self.set(path, value[:cut])
        self.log("truncate", path, f"to {cut} chars")
        return None

    def op_garble(self) -> None:
        strings = self.nodes(str)
        if not strings:
            return self.op_retype()
        path, value = self.pick(strings)
        start = self.choose.integer(0, len(value))
        end = min(len(value), start + self.choose.integer(0, 8))
        junk = "".join(self.pick(_JUNK) for _ in range(self.choose.integer(1, 6)))
        self.set(path, value[:start] + junk + value[end:])
        self.log("garble", path, f"[{start}:{end}] = {junk!r}")
        return None

    def op_encoding(self) -> None:
        strings = [(p, v) for p, v in self.nodes(str) if _is_encoded(v)]
        if not strings:
            return self.op_garble()
        path, value = self.pick(strings)
        header, sep, body = value.partition(",") if value[:5] == "data:" else ("", "", value)
        variants = {
            "drop header": body,
            "drop ;base64": header.replace(";base64", "") + sep + body,
            "swap media type": (
                "data:" + self.pick(self.values) + ";base64," + body if sep else body
            ),
            "url-safe alphabet": header + sep + body.replace("+", "-").replace("/", "_"),
            "strip padding": header + sep + body.rstrip("="),
            "extra padding": header + sep + body + "===",
            "odd length": header + sep + body[: (len(body) // 4) * 4 + 1],
            "whitespace": header + sep + body[:8] + " \n" + body[8:],
            "invalid char": header + sep + body[:4] + "*" + body[5:],
            "empty body": header + sep,
            "percent-encoded": header.replace(";base64", "") + sep + "%ZZ%00" + body[:8],
            "uppercase scheme": "DATA:" + value[5:] if sep else body,
            "no comma": header + body if sep else "data:" + body,
        }
        name = self.pick(sorted(variants))
        self.set(path, variants[name])
        self.log("encoding", path, name)
        return None

    def op_duplicate(self) -> None:
        lists = [(p, v) for p, v in self.nodes(list) if v]
        if not lists:
            return self.op_splice()
        path, value = self.pick(lists)
        index = self.choose.integer(0, len(value) - 1)
        value.insert(self.choose.integer(0, len(value)), copy_json(value[index]))
        self.changed(path)
        self.log("duplicate", (*path, index))
        return None

    def op_reorder(self) -> None:
        lists = [(p, v) for p, v in self.nodes(list) if len(v) > 1]
        if not lists:
            return self.op_duplicate()
        path, value = self.pick(lists)
        how = self.pick(("swap", "reverse", "rotate"))
        if how == "swap":
            i, j = self.choose.integer(0, len(value) - 1), self.choose.integer(0, len(value) - 1)
            value[i], value[j] = value[j], value[i]
            how = f"swap {i} {j}"
        elif how == "reverse":
            value.reverse()
        else:
            value.append(value.pop(0))
        self.changed(path)
        self.log("reorder", path, how)
        return None

    def op_unicode(self) -> None:
        junk = self.pick(_UNICODE)
        if self.chance(4):
            objects = [(p, v) for p, v in self.nodes(dict) if v]
            if objects:
                path, value = self.pick(objects)
                key = self.pick(sorted(value))
                value[key + junk] = value.pop(key)
                self.changed(path)
                self.log("unicode", (*path, key), f"key += {junk!r}")
                return None
        strings = self.nodes(str)
        if not strings:
            return self.op_retype()
        path, value = self.pick(strings)
        at = self.choose.integer(0, len(value))
        replacement = junk if self.chance(5) else value[:at] + junk + value[at:]
        self.set(path, replacement)
        self.log("unicode", path, f"insert {junk!r} at {at}")
        return None

    def op_nest(self) -> None:
        path, value = self.pick(self.nodes())
        depth = self.pick(_NEST_DEPTHS)
        as_list = self.chance(2)
        nested = copy_json(value)
        for _ in range(depth):
            nested = [nested] if as_list else {"a": nested}
        self.set(path, nested)
        self.log("nest", path, f"{depth} levels of {'arrays' if as_list else 'objects'}")

    def op_huge(self) -> None:
        strings = self.nodes(str)
        if not strings:
            return self.op_retype()
        path, value = self.pick(strings)
        size = self.pick(_HUGE_SIZES)
        unit = value or "A"
        self.set(path, (unit * (size // len(unit) + 1))[:size])
        self.log("huge", path, f"{size} chars")
        return None

    def op_splice(self) -> None:
        everything = self.nodes()
        path, _ = self.pick(everything)
        from_path, value = self.pick(everything)
        self.set(path, copy_json(value))
        self.log("splice", path, f"<- {'$' + ''.join(f'[{s!r}]' for s in from_path)}")

    def op_vocab(self) -> None:
        value = self.pick(self.values)
        fields = [
            (p, v)
            for p, v in self.nodes(str)
            if p and isinstance(p[-1], str) and p[-1] in _ENUM_KEYS
        ]
        if fields and not self.chance(4):
            path, _ = self.pick(fields)
            self.set(path, value)
        else:
            objects = self.nodes(dict)
            if not objects:
                return self.op_retype()
            path, _ = self.pick(objects)
            path = (*path, self.pick(("type", "role")))
            self.set(path, value)
        self.log("vocab", path, f"= {value!r}")
        return None

    def op_rename(self) -> None:
        objects = [(p, v) for p, v in self.nodes(dict) if v]
        if not objects:
            return self.op_vocab()
        path, value = self.pick(objects)
        old = self.pick(sorted(value))
        new = self.pick(self.keys)
        value[new] = value.pop(old)
        self.changed(path)
        self.log("rename", (*path, old), f"-> {new!r}")
        return None

    def op_number(self) -> None:
        path, _ = self.pick(self.nodes())
        number = self.pick(_NUMBERS)
        self.set(path, number)
        self.log("number", path, f"= {number!r}")


def _is_encoded(value: str) -> bool:
    if value[:5].lower() == "data:":
        return True
    return len(value) >= 16 and set(value[:64]) <= _BASE64_CHARS


def _short(value: Any) -> str:
    """A one-line description of a value (never recursive: values may nest very deeply)."""
    if isinstance(value, dict):
        return f"<object with keys {sorted(value)[:4]!r}>"
    if isinstance(value, list):
        return f"<array of {len(value)}>"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def mutate(seed: Seed, choose: Chooser, *, max_operations: int = 4) -> Mutant:
    """A mutated copy of ``seed.payload`` after one to ``max_operations`` operations."""
    walked = _seed_walk(seed)
    payload, walk = walked.copy()
    mutant = Mutant(seed, payload)
    run = _Mutation(mutant, choose, walk, walked.keys)
    for _ in range(choose.integer(1, max_operations)):
        run.apply(run.pick(_WEIGHTED))
    return mutant


def mutants(pool: Sequence[Seed]) -> SearchStrategy[Mutant]:
    """Hypothesis strategy: `mutate` on a seed of ``pool``, its choices seeded by one draw.

    A hypothesis draw per choice would cost more than the parse the mutant feeds.
    """
    from hypothesis import strategies as st

    def build(seed: int) -> Mutant:
        choose = RandomChooser(seed)
        return mutate(_pick(choose, pool), choose)

    return st.integers(0, 2**32 - 1).map(build)
