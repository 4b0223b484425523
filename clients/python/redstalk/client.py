"""The synchronous client: a socket, and the commands of commands.Commands over it."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from .commands import Commands, Outcome, Pipeline, Request
from .errors import ConnectionClosed, RedstalkError
from .protocol import CRLF, Reply, ReplyReader

DEFAULT_PORT = 11300

# Requests sent before their replies are read. Bounded so that a huge batch cannot fill both
# directions' socket buffers (the server stops reading while its replies are not read).
WINDOW = 512


def windows(requests: list[Request[Any]]) -> Iterator[tuple[bytes, list[Request[Any]]]]:
    for start in range(0, len(requests), WINDOW):
        window = requests[start : start + WINDOW]
        yield b"".join(r.encode() for r in window), window


def outcome(request: Request[Any], reply: Reply) -> Outcome:
    try:
        return request.decode(reply)
    except RedstalkError as err:
        return err


class Connection:
    """One TCP connection: send raw bytes, read whole replies (the low-level layer)."""

    def __init__(self, host: str = "127.0.0.1", port: int = DEFAULT_PORT, connect_timeout: float | None = 5.0) -> None:
        self._sock: socket.socket | None = socket.create_connection((host, port), timeout=connect_timeout)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._reader = ReplyReader()

    def _socket(self) -> socket.socket:
        if self._sock is None:
            raise ConnectionClosed("connection is closed")
        return self._sock

    def send(self, data: bytes) -> None:
        sock = self._socket()
        sock.settimeout(None)
        sock.sendall(data)

    def read_reply(self, timeout: float | None = None) -> Reply:
        """The next whole reply; TimeoutError when none is complete within timeout seconds."""
        sock = self._socket()
        deadline = None if timeout is None else time.monotonic() + timeout
        while (reply := self._reader.pop()) is None:
            sock.settimeout(None if deadline is None else max(deadline - time.monotonic(), 0.001))
            data = sock.recv(65536)
            if not data:
                raise ConnectionClosed("connection closed by the server")
            self._reader.feed(data)
        return reply

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    @property
    def closed(self) -> bool:
        return self._sock is None


class Client(Commands):
    """A connection to redstalk (or beanstalkd). `timeout`: seconds to wait for a reply on
    top of what the command itself waits (reserve-with-timeout's seconds); None waits forever.
    Thread-safe: one command (or pipeline) at a time."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        *,
        connect_timeout: float | None = 5.0,
        timeout: float | None = None,
    ) -> None:
        self.connection = Connection(host, port, connect_timeout)
        self.timeout = timeout
        self._lock = threading.Lock()

    def _call_many(self, requests: list[Request[Any]], combine: Callable[[list[Outcome]], Any]) -> Any:
        with self._lock:
            outcomes = []
            try:
                for data, window in windows(requests):
                    self.connection.send(data)
                    for request in window:
                        outcomes.append(outcome(request, self.connection.read_reply(request.reply_timeout(self.timeout))))
            except BaseException:
                # A reply left unread would be taken for the next command's: drop the connection.
                self.connection.close()
                raise
        return combine(outcomes)

    def pipeline(self) -> Pipeline:
        return Pipeline(self)

    def quit(self) -> None:
        """Say goodbye (the server returns this connection's reserved jobs to ready) and close."""
        with self._lock:
            if not self.connection.closed:
                try:
                    self.connection.send(b"quit" + CRLF)
                except OSError:
                    pass  # already gone: closing is all that is left to do
                self.connection.close()

    close = quit

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
