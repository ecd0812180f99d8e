"""AsyncClient: the client's surface for asyncio programs. Each call runs
the synchronous client in a worker thread, so the event loop never blocks
on the socket; a stream's events are handed over as they come."""
from __future__ import annotations

import asyncio
import functools
import threading
from typing import Any, AsyncIterator, Callable, Iterator, Optional

from .client import Client, SessionHandle
from .types import Event

_DONE = object()


async def _aiter(make: Callable[[], Iterator[Event]]) -> AsyncIterator[Event]:
    loop = asyncio.get_running_loop()
    queue: "asyncio.Queue[Any]" = asyncio.Queue()

    def pump() -> None:
        try:
            for ev in make():
                loop.call_soon_threadsafe(queue.put_nowait, ev)
        except BaseException as e:  # handed to the reader
            loop.call_soon_threadsafe(queue.put_nowait, e)
        finally:
            loop.call_soon_threadsafe(queue.put_nowait, _DONE)

    threading.Thread(target=pump, daemon=True).start()
    while True:
        item = await queue.get()
        if item is _DONE:
            return
        if isinstance(item, BaseException):
            raise item
        yield item


class AsyncSession:
    """A session for asyncio: ``async with await client.session(...) as s``."""

    def __init__(self, handle: SessionHandle) -> None:
        self._s = handle
        self.id = handle.id
        self.info = handle.info

    async def __aenter__(self) -> "AsyncSession":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._s, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(method, *args, **kwargs)
        return call

    def exec(self, *args: Any, stream: bool = False, **kwargs: Any) -> Any:
        if stream:
            return _aiter(lambda: self._s.exec(*args, stream=True, **kwargs))
        return asyncio.to_thread(functools.partial(self._s.exec, *args, **kwargs))

    async def fork(self, count: int = 1, name: Optional[str] = None) -> "list[AsyncSession]":
        return [AsyncSession(h) for h in await asyncio.to_thread(self._s.fork, count, name)]


class AsyncClient:
    """Client with every call awaitable; ``run(..., stream=True)`` is an
    async iterator of events."""

    def __init__(self, socket: Optional[str] = None, timeout: Optional[float] = None) -> None:
        self._c = Client(socket, timeout)
        self.socket = self._c.socket

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._c, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(method, *args, **kwargs)
        return call

    def run(self, *args: Any, stream: bool = False, **kwargs: Any) -> Any:
        if stream:
            return _aiter(lambda: self._c.run(*args, stream=True, **kwargs))
        return asyncio.to_thread(functools.partial(self._c.run, *args, **kwargs))

    async def session(self, *args: Any, **kwargs: Any) -> AsyncSession:
        return AsyncSession(await asyncio.to_thread(self._c.session, *args, **kwargs))
