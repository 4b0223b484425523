"""Servers for replies redstalk cannot be made to send, and for connections that break."""

from __future__ import annotations

import socket
import threading

HOST = "127.0.0.1"

CLOSE = "close"  # a script step: close the connection instead of answering
SILENT = "silent"  # a script step: answer nothing, until the client hangs up


class FakeServer:
    """Serves its scripts one connection after another, then stops listening. Each step of
    a script reads one command (with its body, for put and put-with) and sends the step's
    reply, or is CLOSE or SILENT. `commands` holds what was read, body included."""

    def __init__(self, *scripts: list[bytes | str]) -> None:
        self.commands: list[bytes] = []
        self.connections = 0
        self._listener = socket.create_server((HOST, 0))
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, args=(scripts,), daemon=True)
        self._thread.start()

    def _serve(self, scripts: tuple[list[bytes | str], ...]) -> None:
        with self._listener:
            for script in scripts:
                try:
                    conn, _ = self._listener.accept()
                except OSError:
                    return  # close(): the client did not come back
                self.connections += 1
                with conn, conn.makefile("rb") as stream:
                    for step in script:
                        line = stream.readline()
                        if not line:
                            break
                        has_body = line.split(b" ", 1)[0] in (b"put", b"put-with")
                        self.commands.append(line + (stream.read(int(line.split()[-1]) + 2) if has_body else b""))
                        if step == SILENT:
                            stream.read()
                        if step in (CLOSE, SILENT):
                            break
                        conn.sendall(step)  # type: ignore[arg-type]

    def close(self) -> None:
        """Waits for the scripts to end; a connection the client never made is not waited for."""
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes a waiting accept()
        except OSError:
            pass  # every script was served: it no longer listens
        self._thread.join(5)


class DroppingProxy:
    """Forwards each connection to a server; on the first one, the reply to the first
    put-with is swallowed and the connection closed: the job is stored, the client cannot
    know it."""

    def __init__(self, port: int) -> None:
        self._upstream = port
        self._listener = socket.create_server((HOST, 0))
        self.port = self._listener.getsockname()[1]
        self._first = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            server = socket.create_connection((HOST, self._upstream))
            put_sent = threading.Event() if self._first else None
            self._first = False
            threading.Thread(target=self._pipe, args=(client, server, put_sent), daemon=True).start()
            threading.Thread(target=self._pipe_back, args=(server, client, put_sent), daemon=True).start()

    @staticmethod
    def _pipe(client: socket.socket, server: socket.socket, put_sent: threading.Event | None) -> None:
        while data := _recv(client):
            if put_sent is not None and b"put-with " in data:
                put_sent.set()  # the client reads each reply before it sends on: the next is this one's
            server.sendall(data)
        _hang_up(server)

    @staticmethod
    def _pipe_back(server: socket.socket, client: socket.socket, put_sent: threading.Event | None) -> None:
        while data := _recv(server):
            if put_sent is not None and put_sent.is_set():
                break
            client.sendall(data)
        _hang_up(client)
        _hang_up(server)

    def close(self) -> None:
        self._listener.close()


def _recv(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536)
    except OSError:
        return b""  # the other direction hung up


def _hang_up(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)  # also wakes the other direction's recv
    except OSError:
        pass  # already hung up
    sock.close()
