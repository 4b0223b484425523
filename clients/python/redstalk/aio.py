"""The asyncio client: the same commands (each awaitable) over asyncio streams."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from .client import DEFAULT_PORT, outcome, raise_any, windows
from .commands import Commands, Outcome, Pipeline, Request, Session
from .errors import ConnectionClosed
from .protocol import CRLF, Reply, ReplyReader
from .retry import RetryPolicy, retry_delay


class AsyncClient(Commands):
    """`client = await AsyncClient.connect(host, port)`; then `await client.put(b"x")`.
    Commands from several tasks are queued: one command (or pipeline) at a time. The
    options are Client's."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        *,
        connect_timeout: float | None = 5.0,
        timeout: float | None = None,
        idempotent: bool = False,
        retry: RetryPolicy = RetryPolicy(),
    ) -> None:
        """Not connected yet: use `await AsyncClient.connect(...)`."""
        self.host, self.port, self.connect_timeout = host, port, connect_timeout
        self.timeout = timeout
        self.idempotent = idempotent
        self.retry = retry
        self.session = Session()
        self._lock = asyncio.Lock()
        self._reader: asyncio.StreamReader
        self._writer: asyncio.StreamWriter
        self._replies = ReplyReader()

    @classmethod
    async def connect(
        cls,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        *,
        connect_timeout: float | None = 5.0,
        timeout: float | None = None,
        idempotent: bool = False,
        retry: RetryPolicy = RetryPolicy(),
    ) -> AsyncClient:
        client = cls(host, port, connect_timeout=connect_timeout, timeout=timeout, idempotent=idempotent, retry=retry)
        await client._open()
        return client

    async def _open(self) -> None:
        connecting = asyncio.open_connection(self.host, self.port)
        self._reader, self._writer = await asyncio.wait_for(connecting, self.connect_timeout)
        self._replies = ReplyReader()

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
            outcomes: list[Outcome] = []
            delays = self.retry.delays()
            while True:
                try:
                    if self._writer.is_closing():
                        await self._reconnect()
                    await self._exchange(requests[len(outcomes) :], outcomes)
                    break
                except OSError as err:
                    # As Client: the replies not read are unknown; those safe to send twice go again.
                    self._writer.close()
                    if (delay := retry_delay(requests[len(outcomes) :], delays, err)) is None:
                        raise
                    await asyncio.sleep(delay)
                except BaseException:
                    # Also on cancellation: a reply left unread would be taken for the next command's.
                    self._writer.close()
                    raise
        return combine(outcomes)

    async def _exchange(self, requests: list[Request[Any]], outcomes: list[Outcome]) -> None:
        for data, window in windows(requests):
            self._writer.write(data)
            await self._writer.drain()
            for request in window:
                reply = await self.read_reply(request.reply_timeout(self.timeout))
                outcomes.append(outcome(request, reply, self.session))

    async def _reconnect(self) -> None:
        await self._open()
        replayed: list[Outcome] = []
        await self._exchange(self.session.requests(), replayed)
        raise_any(replayed)

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
