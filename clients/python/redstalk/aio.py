"""The asyncio client: the same commands (each awaitable) over asyncio streams."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from .client import DEFAULT_PORT, outcome, windows
from .commands import Commands, Outcome, Pipeline, Request
from .errors import ConnectionClosed
from .protocol import CRLF, Reply, ReplyReader


class AsyncClient(Commands):
    """`client = await AsyncClient.connect(host, port)`; then `await client.put(b"x")`.
    Commands from several tasks are queued: one command (or pipeline) at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, timeout: float | None) -> None:
        self._reader = reader
        self._writer = writer
        self._replies = ReplyReader()
        self._lock = asyncio.Lock()
        self.timeout = timeout

    @classmethod
    async def connect(
        cls,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        *,
        connect_timeout: float | None = 5.0,
        timeout: float | None = None,
    ) -> AsyncClient:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), connect_timeout)
        return cls(reader, writer, timeout)

    async def read_reply(self, timeout: float | None = None) -> Reply:
        async with asyncio.timeout(timeout):
            while (reply := self._replies.pop()) is None:
                data = await self._reader.read(65536)
                if not data:
                    raise ConnectionClosed("connection closed by the server")
                self._replies.feed(data)
        return reply

    async def _call_many(self, requests: list[Request[Any]], combine: Callable[[list[Outcome]], Any]) -> Any:
        async with self._lock:
            if self._writer.is_closing():
                raise ConnectionClosed("connection is closed")
            outcomes = []
            try:
                for data, window in windows(requests):
                    self._writer.write(data)
                    await self._writer.drain()
                    for request in window:
                        outcomes.append(outcome(request, await self.read_reply(request.reply_timeout(self.timeout))))
            except BaseException:
                # Also on cancellation: a reply left unread would be taken for the next command's.
                self._writer.close()
                raise
        return combine(outcomes)

    def pipeline(self) -> Pipeline:
        """Queue commands on it, then `await pipeline.execute()`."""
        return Pipeline(self)

    async def quit(self) -> None:
        async with self._lock:
            if not self._writer.is_closing():
                self._writer.write(b"quit" + CRLF)
                self._writer.close()
            try:
                await self._writer.wait_closed()
            except OSError:
                pass  # the server may close first; closed is closed

    close = quit

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
