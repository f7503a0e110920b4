"""A framework record whose parts change role, as one canonical message per run of one role.

Invariants:

- Parts keep their order; consecutive parts of one role share a message, so an ADK event or a
  pydantic-ai request holding a tool result and then user text becomes a tool message and a
  user message.
- Message ``i`` of the record keyed ``key`` has the id ``{key}~{i}`` (`RoleRuns.named`), so a
  record read again yields the same ids; the integration sets the last one's native record.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from convstore.model import Part, Role

__all__ = ["RoleRuns"]


class RoleRuns:
    """Parts in order, joined into runs of one role."""

    __slots__ = ("_runs",)

    def __init__(self) -> None:
        self._runs: list[tuple[Role, list[Part]]] = []

    def __len__(self) -> int:
        return len(self._runs)

    def add(self, role: Role, parts: Iterable[Part]) -> None:
        """``parts`` after the others: in the last run if it has this role, else a new one."""
        if self._runs and self._runs[-1][0] == role:
            self._runs[-1][1].extend(parts)
        else:
            self._runs.append((role, list(parts)))

    def named(self, key: str) -> Iterator[tuple[str, Role, list[Part]]]:
        """Each run with the id its message takes: ``{key}~{index}``."""
        for index, (role, parts) in enumerate(self._runs):
            yield f"{key}~{index}", role, parts
