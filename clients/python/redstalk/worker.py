"""Worker: reserve -> handler -> delete, with prefetch, bounded concurrency, retries and heartbeats.

One thread owns the connection and does all protocol work (reserving, deleting, releasing,
touching), in pipelines; handlers run on a thread pool and report back through a queue.
"""

from __future__ import annotations

import logging
import math
import queue
import random
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

from .client import DEFAULT_PORT, Client
from .commands import Job
from .errors import DeadlineSoon, RedstalkError, TimedOut

log = logging.getLogger("redstalk.worker")

# Longest the loop sleeps while handlers run: how soon it notices new jobs for free slots.
POLL_SECONDS = 0.5


def backoff_delay(releases: int, base: float, cap: float, rng: random.Random | None = None) -> int:
    """Whole seconds to delay a failed job: base * 2^releases capped at cap, jittered over
    the upper half so that jobs failing together do not come back together."""
    ceiling = min(cap, base * 2.0 ** min(releases, 64))
    return math.ceil((rng or random).uniform(ceiling / 2, ceiling))


@dataclass
class _Held:
    job: Job
    pri: int
    ttr: int
    releases: int
    expires: float  # time.monotonic() at which the server takes the job back

    def touch_due(self, now: float) -> bool:
        return self.expires - now <= self.ttr / 2


class Worker:
    """Runs `handler(job)` for every job of `tubes`. A job is deleted when the handler
    returns; when it raises, the job is released with a backoff delay (from its `releases`
    count), or buried on its `max_attempts`-th failure.

    prefetch: jobs taken per reserve-many (1: plain reserve-with-timeout, which beanstalkd
    has too). concurrency: handlers running at once (1: in order). reserve_timeout: seconds a
    reserve waits, so also how soon an idle worker notices stop(). auth_token: sent with
    `auth` first, for a redstalk started with a token."""

    def __init__(
        self,
        handler: Callable[[Job], object],
        *,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        tubes: Iterable[str] = ("default",),
        prefetch: int = 16,
        concurrency: int = 1,
        max_attempts: int = 5,
        backoff_base: float = 1.0,
        backoff_max: float = 300.0,
        reserve_timeout: int = 1,
        connect_timeout: float = 5.0,
        auth_token: str | None = None,
    ) -> None:
        if prefetch < 1 or concurrency < 1 or max_attempts < 1:
            raise ValueError("prefetch, concurrency and max_attempts are at least 1")
        self.handler = handler
        self.host, self.port, self.connect_timeout = host, port, connect_timeout
        self.auth_token = auth_token
        self.tubes = list(tubes)
        self.prefetch, self.concurrency, self.max_attempts = prefetch, concurrency, max_attempts
        self.backoff_base, self.backoff_max = backoff_base, backoff_max
        self.reserve_timeout = reserve_timeout
        self._stopping = threading.Event()
        # (job id, the handler's exception or None); None alone wakes the loop (stop).
        self._done: queue.SimpleQueue[tuple[int, BaseException | None] | None] = queue.SimpleQueue()
        self._finished: list[tuple[int, BaseException | None]] = []
        self._buffer: deque[_Held] = deque()
        self._running: dict[int, _Held] = {}

    def stop(self) -> None:
        """Finish the jobs in hand, release the prefetched ones, then return from run().
        Safe from any thread and from a signal handler."""
        self._stopping.set()
        self._done.put(None)

    def run(self, *, handle_signals: bool = True) -> None:
        """Work until stop() (or SIGTERM / SIGINT, when run in the main thread with
        handle_signals). A lost connection is raised, after the running handlers finish."""
        with self._signals(handle_signals), Client(
            self.host, self.port, connect_timeout=self.connect_timeout
        ) as client, ThreadPoolExecutor(self.concurrency, thread_name_prefix="redstalk-handler") as pool:
            self._watch(client)
            while True:
                self._settle(client)
                self._heartbeat(client)
                if self._stopping.is_set():
                    self._release_buffered(client)
                    if not self._running:
                        return
                    self._wait()
                    continue
                while self._buffer and len(self._running) < self.concurrency:
                    held = self._buffer.popleft()
                    self._running[held.job.id] = held
                    pool.submit(self._handle, held.job)
                if self._buffer or len(self._running) >= self.concurrency:
                    self._wait()
                # A free slot and nothing buffered: wait for jobs only while no handler runs,
                # so that finished jobs are deleted (and running ones touched) promptly.
                elif not self._fetch(client, 0 if self._running else self.reserve_timeout) and self._running:
                    self._wait()

    @contextmanager
    def _signals(self, enabled: bool) -> Iterator[None]:
        if not enabled or threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, lambda *_: self.stop()) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _watch(self, client: Client) -> None:
        if self.auth_token is not None:
            client.auth(self.auth_token)
        for tube in self.tubes:
            client.watch(tube)
        if "default" not in self.tubes:
            client.ignore("default")

    def _handle(self, job: Job) -> None:
        error: BaseException | None = None
        try:
            self.handler(job)
        except BaseException as err:  # noqa: BLE001 - any failure of the handler is the job's failure
            error = err
        self._done.put((job.id, error))

    def _wait(self) -> None:
        """Sleep until a handler finishes, stop() is called, or a touch falls due."""
        now = time.monotonic()
        held = [*self._buffer, *self._running.values()]
        timeout = min([POLL_SECONDS, *(h.expires - h.ttr / 2 - now for h in held)])
        try:
            item = self._done.get(timeout=max(timeout, 0))
        except queue.Empty:
            return
        if item is not None:
            self._finished.append(item)

    def _fetch(self, client: Client, timeout: int) -> bool:
        """Reserve up to prefetch jobs into the buffer; False when none came."""
        try:
            if self.prefetch == 1:
                jobs = [client.reserve(timeout)]
            else:
                jobs = client.reserve_many(self.prefetch, timeout)
        except (TimedOut, DeadlineSoon):
            return False
        # Every job's TTR runs from now: learn it (and the job's releases, for the backoff).
        stats = client.pipeline()
        for job in jobs:
            stats.stats_job(job.id)
        now = time.monotonic()
        for job, info in zip(jobs, stats.execute()):
            if isinstance(info, RedstalkError):
                log.warning("job %d: stats-job failed (%s); leaving it to its TTR", job.id, info)
                continue
            self._buffer.append(
                _Held(job, int(info["pri"]), int(info["ttr"]), int(info["releases"]), now + int(info["time-left"]))
            )
        return True

    def _settle(self, client: Client) -> None:
        """Delete the jobs whose handler returned, release or bury the failed ones: one round trip."""
        while True:
            try:
                item = self._done.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                self._finished.append(item)
        if not self._finished:
            return
        batch = client.pipeline()
        for job_id, error in self._finished:
            held = self._running.pop(job_id)
            if error is None:
                batch.delete(job_id)
            elif held.releases + 1 >= self.max_attempts:
                log.error("job %d failed %d times, burying it: %r", job_id, held.releases + 1, error)
                batch.bury(job_id, held.pri)
            else:
                delay = backoff_delay(held.releases, self.backoff_base, self.backoff_max)
                log.warning("job %d failed (attempt %d), retrying in %ds: %r", job_id, held.releases + 1, delay, error)
                batch.release(job_id, held.pri, delay)
        self._report(batch.execute(), [job_id for job_id, _ in self._finished])
        self._finished.clear()

    def _heartbeat(self, client: Client) -> None:
        """Touch every job in hand, running or buffered, whose TTR is half used."""
        now = time.monotonic()
        due = [h for h in (*self._buffer, *self._running.values()) if h.touch_due(now)]
        if not due:
            return
        touches = client.pipeline()
        for held in due:
            touches.touch(held.job.id)
            held.expires = now + held.ttr
        self._report(touches.execute(), [h.job.id for h in due])

    def _release_buffered(self, client: Client) -> None:
        if not self._buffer:
            return
        releases = client.pipeline()
        for held in self._buffer:
            releases.release(held.job.id, held.pri, 0)
        self._report(releases.execute(), [h.job.id for h in self._buffer])
        self._buffer.clear()

    @staticmethod
    def _report(results: list[object], ids: list[int]) -> None:
        # NOT_FOUND here means the job's TTR ran out first: the server has handed it out again.
        for job_id, result in zip(ids, results):
            if isinstance(result, RedstalkError):
                log.warning("job %d: %r", job_id, result)
