"""Every command and every error word, against a live redstalk."""

from __future__ import annotations

import signal
import threading
import time
import unittest

from redstalk import (
    BadFormat,
    Client,
    ConnectionClosed,
    DeadlineSoon,
    Draining,
    ExpectedCrlf,
    InternalError,
    Job,
    JobTooBig,
    NotFound,
    NotIgnored,
    OutOfMemory,
    RoomState,
    RoomStatus,
    TimedOut,
    UnknownCommand,
)

from .servers import RedisServer, Sidecar, wait_until

BINARY = b"\0bin\r\n\0\xff\xfe\x80\r\n"
server: Sidecar


def setUpModule() -> None:
    global server
    server = Sidecar().ready()
    unittest.addModuleCleanup(server.stop)



class TubeTest(unittest.TestCase):
    """Each test uses and watches only its own tube on the module's server."""

    def setUp(self) -> None:
        self.tube = self._testMethodName[:200]
        self.client = self.connect()

    def connect(self) -> Client:
        client = server.client(timeout=10)
        self.addCleanup(client.close)
        client.use(self.tube)
        client.watch(self.tube)
        client.ignore("default")
        return client


class JobCommandsTest(TubeTest):
    def test_put_peek_reserve_delete(self) -> None:
        c = self.client
        first = c.put(BINARY, priority=5, ttr=30)
        second = c.put("text \u2713")
        self.assertEqual(c.peek(first), Job(first, BINARY))
        self.assertEqual(c.peek(second).body, "text \u2713".encode())
        self.assertEqual(c.reserve(timeout=0), Job(first, BINARY))  # priority 5 before the default
        self.assertIsNone(c.delete(first))
        with self.assertRaises(NotFound):
            c.peek(first)
        with self.assertRaises(NotFound):
            c.delete(first)
        self.assertEqual(c.reserve_job(second).id, second)
        with self.assertRaises(NotFound):
            c.reserve_job(10**9)

    def test_reserve_waits_for_a_put(self) -> None:
        producer = self.connect()
        threading.Timer(0.3, producer.put, (b"late",)).start()
        started = time.monotonic()
        self.assertEqual(self.client.reserve().body, b"late")
        self.assertGreater(time.monotonic() - started, 0.2)

    def test_timed_out(self) -> None:
        with self.assertRaises(TimedOut):
            self.client.reserve(timeout=0)
        with self.assertRaises(TimedOut):
            self.client.reserve_many(5, 0)

    def test_deadline_soon(self) -> None:
        c = self.client
        c.put(b"x", ttr=1)  # the last second of a reservation is the safety margin: all of it
        c.reserve(timeout=0)
        with self.assertRaises(DeadlineSoon):
            c.reserve(timeout=2)
        with self.assertRaises(DeadlineSoon):
            c.reserve_many(2, 2)

    def test_reserve_many(self) -> None:
        c = self.client
        ids = [c.put(f"job{pri}", priority=pri) for pri in (30, 10, 20, 10)]
        jobs = c.reserve_many(3, 0)
        self.assertEqual([j.id for j in jobs], [ids[1], ids[3], ids[2]])  # priority, then id
        self.assertEqual(jobs[0].body, b"job10")
        self.assertEqual({c.stats_job(j.id)["state"] for j in jobs}, {"reserved"})
        self.assertEqual([j.id for j in c.reserve_many(10, 1)], [ids[0]])
        for count in (0, 1001):
            with self.subTest(count=count), self.assertRaises(BadFormat):
                c.reserve_many(count, 0)

    def test_release_bury_touch_kick(self) -> None:
        c = self.client
        job_id = c.put(b"x", priority=7)
        with self.assertRaises(NotFound):
            c.release(job_id)  # not reserved by this connection
        with self.assertRaises(NotFound):
            c.touch(job_id)
        with self.assertRaises(NotFound):
            c.bury(job_id)
        c.reserve(timeout=0)
        self.assertIsNone(c.touch(job_id))
        self.assertIsNone(c.release(job_id, priority=3, delay=0))
        self.assertEqual(c.stats_job(job_id)["pri"], 3)
        c.reserve(timeout=0)
        self.assertIsNone(c.bury(job_id, priority=4))
        self.assertEqual(c.peek_buried(), Job(job_id, b"x"))
        self.assertEqual(c.kick(10), 1)
        self.assertEqual(c.stats_job(job_id)["state"], "ready")
        c.reserve(timeout=0)
        c.bury(job_id)
        self.assertIsNone(c.kick_job(job_id))
        with self.assertRaises(NotFound):
            c.kick_job(job_id)  # ready now: not kickable
        stats = c.stats_job(job_id)
        self.assertEqual((stats["releases"], stats["buries"], stats["kicks"]), (1, 2, 2))

    def test_peeks(self) -> None:
        c = self.client
        for peek in (c.peek_ready, c.peek_delayed, c.peek_buried):
            with self.subTest(peek=peek.__name__), self.assertRaises(NotFound):
                peek()
        ready = c.put(b"r")
        delayed = c.put(b"d", delay=100)
        self.assertEqual(c.peek_ready().id, ready)
        self.assertEqual(c.peek_delayed().id, delayed)
        self.assertEqual(c.stats_job(delayed)["state"], "delayed")

    def test_pipeline_and_delete_many(self) -> None:
        c = self.client
        ids = [c.put(f"{n}") for n in range(600)]  # more than one window of pipelined requests
        self.assertEqual(c.delete_many([*ids[:-1], 10**9]), [10**9])
        p = c.pipeline()
        p.put(b"a")
        p.peek(ids[-1])
        p.delete(10**9)
        p.stats_tube(self.tube)
        inserted, found, missing, stats = p.execute()
        self.assertIsInstance(inserted, int)
        self.assertEqual(found, Job(ids[-1], b"599"))
        self.assertIsInstance(missing, NotFound)
        self.assertEqual(stats["current-jobs-ready"], 2)
        self.assertEqual(len(p), 0)
        self.assertEqual(p.execute(), [])


class TubeCommandsTest(TubeTest):
    def test_use_watch_ignore_lists(self) -> None:
        c = self.client
        self.assertEqual(c.list_tube_used(), self.tube)
        self.assertEqual(c.use("other"), "other")
        self.assertEqual(c.list_tubes_watched(), [self.tube])
        self.assertEqual(c.watch("extra"), 2)
        self.assertEqual(c.watch("extra"), 2)
        self.assertEqual(c.list_tubes_watched(), [self.tube, "extra"])
        self.assertEqual(c.ignore("extra"), 1)
        with self.assertRaises(NotIgnored):
            c.ignore(self.tube)
        self.assertTrue({self.tube, "other"} <= set(c.list_tubes()))

    def test_pause_tube(self) -> None:
        c = self.client
        c.put(b"x")
        self.assertIsNone(c.pause_tube(self.tube, 5))
        self.assertEqual(c.stats_tube(self.tube)["pause"], 5)
        with self.assertRaises(TimedOut):
            c.reserve(timeout=0)
        c.pause_tube(self.tube, 0)
        self.assertEqual(c.reserve(timeout=0).body, b"x")
        with self.assertRaises(NotFound):
            c.pause_tube("no-such-tube", 1)

    def test_stats(self) -> None:
        c = self.client
        job_id = c.put(b"x", priority=1)
        stats = c.stats()
        self.assertEqual(stats["version"], "1.13")
        self.assertIsInstance(stats["id"], str)
        self.assertIs(stats["draining"], False)
        self.assertIsInstance(stats["rusage-utime"], float)
        self.assertGreaterEqual(stats["current-connections"], 1)
        tube = c.stats_tube(self.tube)
        self.assertEqual((tube["name"], tube["current-jobs-urgent"], tube["total-jobs"]), (self.tube, 1, 1))
        job = c.stats_job(job_id)
        self.assertEqual((job["id"], job["tube"], job["state"], job["pri"]), (job_id, self.tube, "ready", 1))
        with self.assertRaises(NotFound):
            c.stats_tube("no-such-tube")
        with self.assertRaises(NotFound):
            c.stats_job(10**9)


class RoomCommandsTest(TubeTest):
    def test_enter_check_leave(self) -> None:
        c, room = self.client, self.tube
        self.assertIsNone(c.room_config(room, 1, 30, 120, 30))
        self.assertEqual(c.enter(room, "ann"), RoomStatus(RoomState.ENTERED))
        bob = c.enter(room, "bob")
        self.assertTrue(bob.waiting)
        self.assertEqual(bob.position, 1)
        self.assertGreater(bob.eta, 0)
        self.assertEqual(c.check(room, "cat").position, 2)
        c.leave(room, "ann")
        c.leave(room, "ann")  # gives up the grace ticket: the place is free
        self.assertEqual(c.check(room, "bob").state, RoomState.READY)
        self.assertEqual(c.enter(room, "bob").state, RoomState.ENTERED)
        with self.assertRaises(NotFound):
            c.leave(room, "zed")
        stats = c.stats_room(room)
        self.assertEqual((stats["name"], stats["participants"], stats["waiting"]), (room, 1, 1))
        self.assertIs(stats["configured"], True)
        self.assertIsInstance(stats["admission-rate"], float)
        self.assertIn(room, c.list_rooms())
        with self.assertRaises(NotFound):
            c.stats_room("no-such-room")

    def test_rate_pause_lottery(self) -> None:
        c, room = self.client, self.tube
        self.assertIsNone(c.room_rate(room, 10))
        self.assertIsNone(c.pause_room(room, True))
        self.assertTrue(c.enter(room, "ann").waiting)
        self.assertIs(c.stats_room(room)["paused"], True)
        c.pause_room(room, False)
        self.assertIsNone(c.room_lottery(room, 60))
        self.assertGreater(c.stats_room(room)["lottery-time-left"], 0)
        c.room_lottery(room, 0)
        stats = c.stats_room(room)
        self.assertEqual((stats["rate-limit"], stats["lottery-time-left"]), (10, 0))
        self.assertEqual(c.enter(room, "ann").state, RoomState.ENTERED)


class ErrorWordsTest(TubeTest):
    def test_bad_format_and_unknown_command(self) -> None:
        c = self.client
        with self.assertRaises(BadFormat):
            c.use("-leading-dash")
        with self.assertRaises(BadFormat):
            c.room_config(self.tube, 0, 30, 120, 30)
        with self.assertRaises(ValueError):
            c.put(b"x", priority=2**32)  # checked here: the server would read the body as commands
        with self.assertRaises(BadFormat):
            c.release(1, priority=2**32)
        with self.assertRaises(UnknownCommand):
            c.command("frobnicate")
        self.assertEqual(c.command("list-tube-used").line, f"USING {self.tube}")

    def test_job_too_big(self) -> None:
        with self.assertRaises(JobTooBig):
            self.client.put(b"x" * 65536)
        self.assertEqual(self.client.put(b"x" * 65535) > 0, True)  # still in step

    def test_expected_crlf(self) -> None:
        c = self.client
        with self.assertRaises(ExpectedCrlf):
            c.command("put 0 0 10 3", b"hello")  # 3 bytes announced, 5 sent
        # The bytes after the announced body are parsed as a command ("lo").
        self.assertEqual(c.connection.read_reply(3).word, "UNKNOWN_COMMAND")

    def test_draining(self) -> None:
        with Sidecar() as draining:
            client = draining.client(timeout=10)
            self.addCleanup(client.close)
            draining.process.signal(signal.SIGUSR1)
            wait_until(lambda: client.stats()["draining"] is True)
            with self.assertRaises(Draining):
                client.put(b"x")

    def test_out_of_memory_and_internal_error(self) -> None:
        redis = RedisServer()
        self.addCleanup(redis.stop)
        with Sidecar(redis) as sidecar:
            client = sidecar.client(timeout=10)
            self.addCleanup(client.close)
            client.put(b"x")
            redis.command("CONFIG", "SET", "maxmemory", "1")
            with self.assertRaises(OutOfMemory):
                client.put(b"x")
            redis.stop()
            with self.assertRaises(InternalError):
                client.put(b"x")


class ConnectionTest(TubeTest):
    def test_quit_hands_reserved_jobs_back(self) -> None:
        worker = self.connect()
        job_id = worker.put(b"x")
        worker.reserve(timeout=0)
        self.assertEqual(self.client.stats_job(job_id)["state"], "reserved")
        worker.quit()
        with self.assertRaises(ConnectionClosed):
            worker.stats()
        wait_until(lambda: self.client.stats_job(job_id)["state"] == "ready")

    def test_context_manager_closes(self) -> None:
        with server.client() as client:
            client.stats()
        self.assertTrue(client.connection.closed)
