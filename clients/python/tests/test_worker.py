"""The Worker helper against a live redstalk: success, retry with backoff then bury,
heartbeat touches (running and prefetched jobs), graceful stop, SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

from redstalk import Job, Worker

from .servers import HOST, Process, Sidecar, wait_until

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "worker.py"
server: Sidecar


def setUpModule() -> None:
    global server
    server = Sidecar().ready()
    unittest.addModuleCleanup(server.stop)



class WorkerTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tube = self._testMethodName
        self.client = server.client(timeout=10)
        self.addCleanup(self.client.close)
        self.client.use(self.tube)

    def start(self, handler, **options) -> Worker:
        """A Worker on this test's tube, running in a thread; stopped and joined at cleanup."""
        worker = Worker(handler, host=HOST, port=server.port, tubes=[self.tube], reserve_timeout=1, **options)
        thread = threading.Thread(target=worker.run, daemon=True)
        thread.start()

        def stop() -> None:
            worker.stop()
            thread.join(10)
            self.assertFalse(thread.is_alive(), "worker did not stop")

        self.addCleanup(stop)
        self.stop_worker = stop
        return worker

    def tube_stats(self) -> dict:
        return self.client.stats_tube(self.tube)

    def test_handles_and_deletes_every_job(self) -> None:
        for prefetch in (8, 1):  # reserve-many, and plain reserve-with-timeout
            with self.subTest(prefetch=prefetch):
                seen: list[bytes] = []
                lock = threading.Lock()

                def handler(job: Job) -> None:
                    with lock:
                        seen.append(job.body)

                deleted = self.tube_stats()["cmd-delete"]
                for n in range(20):
                    self.client.put(f"job {n}")
                self.start(handler, prefetch=prefetch, concurrency=4)
                wait_until(lambda: self.tube_stats()["cmd-delete"] == deleted + 20)
                self.stop_worker()
                self.assertEqual(sorted(seen), sorted(f"job {n}".encode() for n in range(20)))
                stats = self.tube_stats()
                self.assertEqual((stats["current-jobs-ready"], stats["current-jobs-reserved"]), (0, 0))

    def test_retries_with_backoff_then_buries(self) -> None:
        calls: list[float] = []

        def always_fails(job: Job) -> None:
            calls.append(time.monotonic())
            raise RuntimeError("boom")

        job_id = self.client.put(b"x")
        with self.assertLogs("redstalk.worker", "WARNING") as logs:
            self.start(always_fails, max_attempts=3, backoff_base=1.0, backoff_max=10.0)
            wait_until(lambda: self.client.stats_job(job_id)["state"] == "buried")
        self.assertIn("failed 3 times, burying it", logs.output[-1])
        stats = self.client.stats_job(job_id)
        self.assertEqual((stats["releases"], stats["buries"], len(calls)), (2, 1, 3))
        self.assertGreaterEqual(calls[1] - calls[0], 0.9)  # release delay 1 s (base * 2^0, jittered up)
        self.assertGreaterEqual(calls[2] - calls[1], 0.9)  # 1 or 2 s (base * 2^1, upper half)

    def test_retry_then_success(self) -> None:
        attempts: list[int] = []

        def flaky(job: Job) -> None:
            attempts.append(job.id)
            if len(attempts) == 1:
                raise RuntimeError("first attempt fails")

        job_id = self.client.put(b"x")
        with self.assertLogs("redstalk.worker", "WARNING"):
            self.start(flaky, backoff_base=1.0)
            wait_until(lambda: self.tube_stats()["cmd-delete"] == 1)
        self.assertEqual(attempts, [job_id, job_id])

    def test_heartbeat_keeps_running_and_prefetched_jobs(self) -> None:
        # TTR 2: each job takes 2.5 s, the second one waits in the buffer meanwhile. Without
        # touches both would time out (and be reserved again).
        observer = server.client(timeout=10)
        self.addCleanup(observer.close)
        seen: list[dict] = []

        def slow(job: Job) -> None:
            time.sleep(2.5)
            seen.append(observer.stats_job(job.id))

        for n in range(2):
            self.client.put(f"{n}", ttr=2)
        self.start(slow, prefetch=2, concurrency=1)
        wait_until(lambda: len(seen) == 2)
        self.assertEqual([(s["reserves"], s["timeouts"]) for s in seen], [(1, 0), (1, 0)])
        wait_until(lambda: self.tube_stats()["cmd-delete"] == 2)

    def test_stop_finishes_running_and_releases_prefetched(self) -> None:
        started, release = threading.Event(), threading.Event()
        done: list[int] = []

        def blocking(job: Job) -> None:
            started.set()
            release.wait(10)
            done.append(job.id)

        ids = [self.client.put(f"{n}") for n in range(5)]
        worker = self.start(blocking, prefetch=5, concurrency=1)
        self.assertTrue(started.wait(10))
        self.assertEqual(self.tube_stats()["current-jobs-reserved"], 5)
        worker.stop()
        time.sleep(0.3)  # the worker releases the four prefetched jobs at once ...
        self.assertEqual(self.tube_stats()["current-jobs-ready"], 4)
        release.set()  # ... and finishes the running one
        self.stop_worker()
        self.assertEqual(done, [ids[0]])
        stats = self.tube_stats()
        self.assertEqual((stats["current-jobs-ready"], stats["current-jobs-reserved"], stats["cmd-delete"]), (4, 0, 1))

    def test_example_stops_gracefully_on_sigterm(self) -> None:
        emails = server.client(timeout=10)
        self.addCleanup(emails.close)
        emails.use("emails")
        for n in range(6):
            emails.put(f"user{n}@example.com")
        fd, log = tempfile.mkstemp(prefix="redstalk-example-", suffix=".log")
        os.close(fd)
        worker = Process([sys.executable, str(EXAMPLE), HOST, str(server.port)], log=Path(log))
        self.addCleanup(worker.stop)
        wait_until(lambda: "sent job" in worker.output())
        worker.signal(signal.SIGTERM)
        try:
            self.assertEqual(worker.popen.wait(10), 0, worker.output())
        except subprocess.TimeoutExpired:
            self.fail(f"example did not stop on SIGTERM:\n{worker.output()}")
        output = worker.output()
        self.assertIn("worker stopped", output)
        stats = emails.stats_tube("emails")
        sent = output.count("sent job")
        self.assertEqual(stats["current-jobs-reserved"], 0)
        self.assertEqual((stats["cmd-delete"], stats["current-jobs-ready"]), (sent, 6 - sent))


class WorkerOptionsTest(unittest.TestCase):
    def test_counts_are_at_least_one(self) -> None:
        for option in ("prefetch", "concurrency", "max_attempts"):
            with self.subTest(option=option), self.assertRaises(ValueError):
                Worker(print, **{option: 0})
