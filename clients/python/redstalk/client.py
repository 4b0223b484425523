"""The synchronous client: a socket, and the commands of commands.Commands over it."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from .commands import Commands, Outcome, Pipeline, Request, Session
from .errors import ConnectionClosed, RedstalkError
from .protocol import CRLF, Reply, ReplyReader
from .retry import RetryPolicy, retry_delay

DEFAULT_PORT = 11300

# Requests sent before their replies are read. Bounded so that a huge batch cannot fill both
# directions' socket buffers (the server stops reading while its replies are not read).
WINDOW = 512


def windows(requests: list[Request[Any]]) -> Iterator[tuple[bytes, list[Request[Any]]]]:
    for start in range(0, len(requests), WINDOW):
        window = requests[start : start + WINDOW]
        yield b"".join(r.encode() for r in window), window


def outcome(request: Request[Any], reply: Reply, session: Session) -> Outcome:
    try:
        result = request.decode(reply)
    except RedstalkError as err:
        return err
    if request.remember is not None:
        request.remember(session)
    return result


def raise_any(outcomes: list[Outcome]) -> None:
    for result in outcomes:
        if isinstance(result, RedstalkError):
            raise result


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
    A put-with with a key whose reply is lost is sent again on a new connection, as `retry`
    says; `idempotent`: every put without a key of its own gets a random one (redstalk only).
    Thread-safe: one command (or pipeline) at a time."""

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
        self.host, self.port, self.connect_timeout = host, port, connect_timeout
        self.connection = Connection(host, port, connect_timeout)
        self.timeout = timeout
        self.idempotent = idempotent
        self.retry = retry
        self.session = Session()
        self._lock = threading.Lock()

    def _call_many(self, requests: list[Request[Any]], combine: Callable[[list[Outcome]], Any]) -> Any:
        with self._lock:
            if self.connection.closed:
                raise ConnectionClosed("connection is closed")
            outcomes: list[Outcome] = []
            delays = self.retry.delays()
            while True:
                try:
                    if self.connection.closed:
                        self._reconnect()
                    self._exchange(requests[len(outcomes) :], outcomes)
                    break
                except OSError as err:
                    # Lost, reset or timed out: the replies not read are unknown (and would be out
                    # of step). Those safe to send twice go again on a new connection.
                    self.connection.close()
                    if (delay := retry_delay(requests[len(outcomes) :], delays, err)) is None:
                        raise
                    time.sleep(delay)
                except BaseException:
                    # A reply left unread would be taken for the next command's: drop the connection.
                    self.connection.close()
                    raise
        return combine(outcomes)

    def _exchange(self, requests: list[Request[Any]], outcomes: list[Outcome]) -> None:
        """Send the requests; append each one's outcome as its reply is read."""
        for data, window in windows(requests):
            self.connection.send(data)
            for request in window:
                reply = self.connection.read_reply(request.reply_timeout(self.timeout))
                outcomes.append(outcome(request, reply, self.session))

    def _reconnect(self) -> None:
        self.connection = Connection(self.host, self.port, self.connect_timeout)
        replayed: list[Outcome] = []
        self._exchange(self.session.requests(), replayed)
        raise_any(replayed)

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
