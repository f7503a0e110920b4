"""The blocking ``BaseCheckpointSaver`` methods, refused: `AsyncOnlyMethods`.

`ConvstoreSaver` (`convstore.integrations.langgraph`) stores through the asynchronous store
API only; each blocking method raises `AsyncOnlyError` naming the ``a`` method to call instead.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

from convstore.errors import AsyncOnlyError

__all__ = ["AsyncOnlyMethods"]


class AsyncOnlyMethods:
    """Mixed in before ``BaseCheckpointSaver``: its blocking methods raise `AsyncOnlyError`."""

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Not available: `AsyncOnlyError` (use ``aget_tuple``)."""
        raise _async_only("get_tuple")

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Not available: `AsyncOnlyError` (use ``alist``)."""
        raise _async_only("list")

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Not available: `AsyncOnlyError` (use ``aput``)."""
        raise _async_only("put")

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Not available: `AsyncOnlyError` (use ``aput_writes``)."""
        raise _async_only("put_writes")

    def delete_thread(self, thread_id: str) -> None:
        """Not available: `AsyncOnlyError` (use ``adelete_thread``)."""
        raise _async_only("delete_thread")


def _async_only(method: str) -> AsyncOnlyError:
    return AsyncOnlyError(
        f"ConvstoreSaver is asynchronous: call a{method} (graph.ainvoke / graph.astream), "
        f"not {method}"
    )
