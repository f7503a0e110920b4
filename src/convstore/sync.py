"""A blocking facade over `convstore.ConversationStore`, for Flask, Django and scripts.

``convstore.sync.SyncConversationStore`` (also importable as ``convstore.sync.ConversationStore``)
has the async store's methods with the same arguments and results, blocking. It owns one private
event loop running in one background thread; every call is handed to that loop and waited for.

Lifetime in a web app: make one store at import time (a module global) and use it from every
request, in any thread. The first call opens it (once, under a lock: concurrent first calls
wait for the same open); interpreter exit closes it. ``with`` and `open`/`close` still work for
scripts. After an explicit `close`, calls raise `ClosedError` saying to call `open` again.

Invariants:

- One loop, one thread per open store; every database connection and blob handle lives on that
  loop, so the async store's single-loop assumptions hold whichever threads call the facade.
- ``close()`` (also ``with`` exit, garbage collection of the facade, and interpreter exit, via
  a `weakref.finalize`) closes the async store on its loop, stops the loop and joins the
  thread. The thread is a daemon, so a store nobody closed can never keep the process alive;
  the finalizer still closes it cleanly at exit.
- The wrappers are generated from the async methods (`_blocking`), so their signatures are the
  async store's own, checked by mypy; `tests/test_sync.py` checks that no public async method is
  left without one.
- A call made from the store's own loop thread (a coroutine scheduled on it) would wait for
  itself forever; it raises `InvalidInputError` instead.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import Future
from types import TracebackType
from typing import Any, Concatenate, Generic, Literal, ParamSpec, Self, TypeVar, overload

from convstore.db import DEFAULT_URL
from convstore.errors import ClosedError, InvalidInputError
from convstore.store import DEFAULT_MAX_ATTACHMENT_SIZE
from convstore.store import ConversationStore as AsyncConversationStore
from convstore.store.conversation_store import DEFAULT_BLOB_TIMEOUT, DEFAULT_MESSAGE_CACHE

__all__ = ["ConversationStore", "SyncConversationStore"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


class _LoopThread:
    """An event loop running forever in a daemon thread, until `stop`."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._serve, name="convstore-sync-loop", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            # Let async generators and the default executor finish before the loop goes away.
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.run_until_complete(self.loop.shutdown_default_executor())
            self.loop.close()

    def run(self, coro: Coroutine[Any, Any, _R]) -> _R:
        """Run ``coro`` on the loop and wait for its result (or exception)."""
        if threading.current_thread() is self.thread:
            coro.close()
            raise InvalidInputError(
                "a blocking convstore call was made from the store's own event loop thread; "
                "use the async ConversationStore there"
            )
        future: Future[_R] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result()
        except BaseException:
            # KeyboardInterrupt (or any other escape) while waiting: do not leave it running.
            future.cancel()
            raise

    def stop(self) -> None:
        """Stop the loop and join the thread (idempotent)."""
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join()


def _shutdown(runner: _LoopThread, store: AsyncConversationStore) -> None:
    # Called by close() or by the finalizer (garbage collection, interpreter exit); never
    # holds a reference to the facade itself.
    try:
        if runner.thread.is_alive():
            runner.run(store.close())
    finally:
        runner.stop()


class _blocking(Generic[_P, _R]):  # noqa: N801 - used like a function in the class body
    """Descriptor: the blocking twin of one async `ConversationStore` method."""

    def __init__(
        self, method: Callable[Concatenate[AsyncConversationStore, _P], Coroutine[Any, Any, _R]]
    ) -> None:
        self.method = method
        self.__doc__ = method.__doc__

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> Self: ...
    @overload
    def __get__(self, instance: SyncConversationStore, owner: type[Any]) -> Callable[_P, _R]: ...
    def __get__(
        self, instance: SyncConversationStore | None, owner: type[Any]
    ) -> Self | Callable[_P, _R]:
        if instance is None:
            return self
        method = self.method

        def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            runner, store = instance._require_open()
            return runner.run(method(store, *args, **kwargs))

        call.__name__ = method.__name__
        call.__doc__ = method.__doc__
        return call


class SyncConversationStore:
    """The async `convstore.ConversationStore`, blocking; same constructor arguments.

    Make it once and use it from any thread; the first call opens it::

        store = SyncConversationStore("sqlite+aiosqlite:///app.db")   # at import time

        def view(request):                                            # any request thread
            conv = store.get_or_create_conversation("chat-42")
            store.append(conv.id, Message.user("hi"))

    Or scope it with ``with SyncConversationStore(...) as store:`` (opened on entry, closed on
    exit), or call `open` and `close` yourself.
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        blobs: str | None = None,
        max_attachment_size: int = DEFAULT_MAX_ATTACHMENT_SIZE,
        auto_migrate: bool | None = None,
        sqlite_synchronous: Literal["full", "normal"] = "full",
        blob_options: Mapping[str, Any] | None = None,
        dedupe: Literal["tenant", "global"] = "tenant",
        blob_timeout: float | None = DEFAULT_BLOB_TIMEOUT,
        message_cache: int = DEFAULT_MESSAGE_CACHE,
    ) -> None:
        # Nothing starts here: the thread and connections exist only between open and close.
        self._store = AsyncConversationStore(
            url,
            blobs=blobs,
            max_attachment_size=max_attachment_size,
            auto_migrate=auto_migrate,
            sqlite_synchronous=sqlite_synchronous,
            blob_options=blob_options,
            dedupe=dedupe,
            blob_timeout=blob_timeout,
            message_cache=message_cache,
        )
        self._runner: _LoopThread | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._lock = threading.Lock()
        self._closed_explicitly = False

    @property
    def url(self) -> str:
        """The database URL."""
        return self._store.url

    @property
    def blobs_url(self) -> str:
        """The blob storage URL."""
        return self._store.blobs_url

    @property
    def async_store(self) -> AsyncConversationStore:
        """The async store behind the facade (usable only on `loop`)."""
        return self._store

    @property
    def closed(self) -> bool:
        """Whether the store is closed (never opened, or closed since)."""
        return self._runner is None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The facade's event loop (open stores only)."""
        return self._require_open()[0].loop

    def open(self) -> Self:
        """Start the loop thread and open the store (idempotent; the first call does it too)."""
        with self._lock:
            self._closed_explicitly = False
            if self._runner is not None:
                return self
            runner = _LoopThread()
            try:
                runner.run(self._store.open())
            except BaseException:
                runner.stop()
                raise
            self._runner = runner
            self._finalizer = weakref.finalize(self, _shutdown, runner, self._store)
        return self

    def close(self) -> None:
        """Close the store, stop the loop and join its thread (idempotent)."""
        with self._lock:
            finalizer, self._finalizer, self._runner = self._finalizer, None, None
            self._closed_explicitly = True
        if finalizer is not None:
            finalizer()

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _require_open(self) -> tuple[_LoopThread, AsyncConversationStore]:
        runner = self._runner
        if runner is None:
            if self._closed_explicitly:
                raise ClosedError(
                    "the store was closed: call store.open() to use it again (or make it once "
                    "at import time and never close it; interpreter exit closes it)"
                )
            self.open()  # first use; the lock makes concurrent first calls open it once
            runner = self._runner
            if runner is None:  # closed by another thread meanwhile
                raise ClosedError("the store was closed while this call was opening it")
        return runner, self._store

    # The async store's public methods, one blocking twin each (same signature and result).
    migrate = _blocking(AsyncConversationStore.migrate)
    create_conversation = _blocking(AsyncConversationStore.create_conversation)
    get_or_create_conversation = _blocking(AsyncConversationStore.get_or_create_conversation)
    update_conversation = _blocking(AsyncConversationStore.update_conversation)
    update_state = _blocking(AsyncConversationStore.update_state)
    list_conversations = _blocking(AsyncConversationStore.list_conversations)
    search = _blocking(AsyncConversationStore.search)
    delete_conversation = _blocking(AsyncConversationStore.delete_conversation)
    append = _blocking(AsyncConversationStore.append)
    load = _blocking(AsyncConversationStore.load)
    get_conversation = _blocking(AsyncConversationStore.get_conversation)
    load_native = _blocking(AsyncConversationStore.load_native)
    get_message = _blocking(AsyncConversationStore.get_message)
    get_messages = _blocking(AsyncConversationStore.get_messages)
    pop = _blocking(AsyncConversationStore.pop)
    truncate = _blocking(AsyncConversationStore.truncate)
    fork = _blocking(AsyncConversationStore.fork)
    branches = _blocking(AsyncConversationStore.branches)
    tree = _blocking(AsyncConversationStore.tree)
    switch_branch = _blocking(AsyncConversationStore.switch_branch)
    complete_tool_call = _blocking(AsyncConversationStore.complete_tool_call)
    cancel_tool_calls = _blocking(AsyncConversationStore.cancel_tool_calls)
    compact = _blocking(AsyncConversationStore.compact)
    render = _blocking(AsyncConversationStore.render)
    read_attachment = _blocking(AsyncConversationStore.read_attachment)
    export = _blocking(AsyncConversationStore.export)
    erase_tenant = _blocking(AsyncConversationStore.erase_tenant)
    prune = _blocking(AsyncConversationStore.prune)


ConversationStore = SyncConversationStore
"""The facade's earlier name, kept as an alias."""
