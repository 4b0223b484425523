"""Processes for the tests: one private redis-server per test run, and redstalk sidecars on it
(a fresh key prefix is a fresh, empty server).

Every process is started in its own process group and asked to die with this process
(PR_SET_PDEATHSIG), and stopped by PID (its group) when done, or at exit.
"""

from __future__ import annotations

import atexit
import ctypes
import itertools
import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from redstalk import Client

ROOT = Path(__file__).resolve().parents[3]  # clients/python/tests/ -> the repository
HOST = "127.0.0.1"
START_TIMEOUT = 60.0  # generous: on 2 busy cores several node processes start at once

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: if the test process dies (even by SIGKILL),
    # the kernel sends the child SIGTERM, so nothing outlives a killed test run.
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class Process:
    """A child process in its own group, stopped (SIGTERM, then SIGKILL) by stop()."""

    def __init__(self, args: list[str], cwd: Path | None = None, log: Path | None = None) -> None:
        self.log = log
        out = open(log, "wb") if log else subprocess.DEVNULL
        try:
            self.popen = subprocess.Popen(
                args,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        finally:
            if log:
                out.close()
        _live.add(self)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log else ""

    def signal(self, sig: int) -> None:
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, sig)

    def stop(self, timeout: float = 10.0) -> int | None:
        try:
            self.signal(signal.SIGTERM)
            try:
                return self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
                return self.popen.wait(5)
        except ProcessLookupError:
            return self.popen.wait(5)
        finally:
            _live.discard(self)
            if self.log:
                self.log.unlink(missing_ok=True)


_live: set[Process] = set()


@atexit.register
def _stop_all() -> None:
    for proc in list(_live):
        proc.stop()


# SIGTERM (a test runner's timeout) stops the run like Ctrl-C: unittest ends the run on
# KeyboardInterrupt, the cleanups unwind and the atexit hook above stops what is left.
if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
    signal.signal(signal.SIGTERM, signal.default_int_handler)


class RedisServer:
    def __init__(self) -> None:
        for attempt in itertools.count():
            self.port = free_port()
            self.process = Process(
                ["redis-server", "--port", str(self.port), "--bind", HOST, "--save", "", "--appendonly", "no"]
            )
            if self._wait_ready():
                return
            self.process.stop()
            if attempt == 2:
                raise RuntimeError("redis-server did not start")

    def _wait_ready(self) -> bool:
        until = time.monotonic() + 10
        while time.monotonic() < until and self.process.popen.poll() is None:
            try:
                if self.command("PING") == b"+PONG":
                    return True
            except OSError:
                time.sleep(0.05)
        return False

    @property
    def url(self) -> str:
        return f"redis://{HOST}:{self.port}"

    def command(self, *args: str) -> bytes:
        """One Redis command; its reply's first line."""
        wire = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a.encode()) for a in args)
        with socket.create_connection((HOST, self.port), timeout=5) as s:
            s.sendall(wire)
            data = b""
            while not data.endswith(b"\r\n"):
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        return data.strip()

    def stop(self) -> None:
        self.process.stop()


_shared: RedisServer | None = None
_shared_lock = threading.Lock()


def shared_redis() -> RedisServer:
    """The run's private redis-server, started on first use and stopped at exit."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = RedisServer()
        return _shared


def redstalk_command() -> list[str]:
    if os.environ.get("REDSTALK_CMD"):
        return os.environ["REDSTALK_CMD"].split()
    return ["node", "--import", "tsx", str(ROOT / "src" / "cli.ts")]


_prefixes = itertools.count(1)


class Sidecar:
    """A redstalk process on a fresh prefix of `redis` (the shared one by default).
    Construct it (the process starts), then ready() waits for its listening line."""

    def __init__(self, redis: RedisServer | None = None, args: tuple[str, ...] = ()) -> None:
        self.redis = redis or shared_redis()
        self.prefix = f"py{os.getpid()}-{next(_prefixes)}"
        fd, log = tempfile.mkstemp(prefix="redstalk-sidecar-", suffix=".log")
        os.close(fd)
        cmd = [*redstalk_command(), "-l", HOST, "-p", "0", "--redis", self.redis.url, "--prefix", self.prefix, *args]
        self.process = Process(cmd, cwd=ROOT, log=Path(log))
        self.port = 0

    def ready(self) -> Sidecar:
        until = time.monotonic() + START_TIMEOUT
        while not self.port:
            for line in self.process.output().splitlines():
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if isinstance(entry, dict) and entry.get("msg") == "redstalk listening":
                    self.port = int(entry["listen"].rsplit(":", 1)[1])
            if self.port:
                break
            if self.process.popen.poll() is not None or time.monotonic() > until:
                output = self.process.output()
                self.stop()
                raise RuntimeError(f"redstalk did not start:\n{output}")
            time.sleep(0.02)
        return self

    def client(self, **options: object) -> Client:
        return Client(HOST, self.port, **options)  # type: ignore[arg-type]

    def stop(self) -> int | None:
        return self.process.stop()

    def __enter__(self) -> Sidecar:
        return self.ready()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def sidecar(*args: str) -> Sidecar:
    """A started sidecar on a fresh prefix of the shared redis-server."""
    return Sidecar(args=args).ready()


def wait_until(probe, timeout: float = 15.0) -> None:
    """Polls probe() every 50 ms until it is true; fails after `timeout` seconds."""
    until = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > until:
            raise AssertionError("condition not reached in time")
        time.sleep(0.05)
