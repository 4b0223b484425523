"""put-with and tube-set: replies and argument checks, the retry of a put whose reply was
lost (scripted fake servers; a proxy that drops a live sidecar's reply), and both commands
against a live redstalk."""

from __future__ import annotations

import re
import unittest

from redstalk import (
    AsyncClient,
    BadFormat,
    Client,
    ConnectionClosed,
    JobTooBig,
    NotFound,
    PutResult,
    RetryPolicy,
    TimedOut,
)

from .fakes import CLOSE, HOST, SILENT, DroppingProxy, FakeServer
from .servers import Sidecar, wait_until

NO_WAIT = RetryPolicy(backoff=0)
KEYED_PUT = b"put-with order-17 0 delete 1024 0 60 4\r\nbody\r\n"
RANDOM_KEYED_PUT = re.compile(rb"put-with [0-9a-f]{32} 0 delete 1024 0 60 4\r\nbody\r\n")
STATS_TUBE = (
    b'---\nname: "t"\ncurrent-jobs-urgent: 0\ncurrent-jobs-ready: 1\ncurrent-jobs-reserved: 0\n'
    b"current-jobs-delayed: 0\ncurrent-jobs-buried: 0\ntotal-jobs: 1\ncurrent-using: 1\ncurrent-watching: 1\n"
    b"current-waiting: 0\ncmd-delete: 0\ncmd-pause-tube: 0\npause: 0\npause-time-left: 0\nmax-reserved: 5\n"
    b"reserve-rate: 100\ndedup-window: 3600\njobs-expired: 2\nduplicate-puts: 3\n"
)


class RepliesAndArgumentsTest(unittest.TestCase):
    def test_put_with_replies(self) -> None:
        server = FakeServer([b"INSERTED 4\r\n", b"DUPLICATE 4\r\n", b"JOB_TOO_BIG\r\n"])
        with Client(HOST, server.port) as client:
            inserted = client.put_with(b"x", expire=60, on_expiry="bury", priority=5, delay=2, ttr=30)
            self.assertEqual(inserted, PutResult(4, False))
            self.assertEqual(client.put_with("x", "k"), PutResult(4, True))
            with self.assertRaises(JobTooBig):
                client.put_with(b"x", "k")
        server.close()
        self.assertEqual(server.commands[0], b"put-with - 60 bury 5 2 30 1\r\nx\r\n")
        self.assertEqual(server.commands[1], b"put-with k 0 delete 1024 0 60 1\r\nx\r\n")

    def test_tube_set_and_the_extra_stats_tube_fields(self) -> None:
        server = FakeServer([b"OK\r\n", b"OK %d\r\n%s\r\n" % (len(STATS_TUBE), STATS_TUBE)])
        with Client(HOST, server.port) as client:
            self.assertIsNone(client.tube_set("t", "max-reserved", 5))
            stats = client.stats_tube("t")
        server.close()
        self.assertEqual(server.commands[0], b"tube-set t max-reserved 5\r\n")
        self.assertEqual(len(stats), 19)
        self.assertEqual(
            [stats[k] for k in ("max-reserved", "reserve-rate", "dedup-window", "jobs-expired", "duplicate-puts")],
            [5, 100, 3600, 2, 3],
        )

    def test_what_would_break_the_framing_is_not_sent(self) -> None:
        server = FakeServer([b"INSERTED 1\r\n"])
        with Client(HOST, server.port) as client:
            for key in ("", "-", "two words", "x" * 129, "caf\u00e9", "a\r\nstats"):
                with self.subTest(key=key[:20]), self.assertRaises(ValueError):
                    client.put_with(b"x", key)
            for options in ({"on_expiry": "keep"}, {"expire": 2**32}, {"expire": -1}):
                with self.subTest(**options), self.assertRaises(ValueError):
                    client.put_with(b"x", **options)  # type: ignore[arg-type]
            with self.assertRaises(ValueError):
                client.tube_set("t", "max reserved", 1)
            self.assertEqual(client.put_with(b"x", "k" * 128), PutResult(1, False))
        server.close()
        self.assertEqual(len(server.commands), 1)


class RetryPolicyTest(unittest.TestCase):
    def test_doubles_up_to_the_cap_with_jitter_for_the_attempts(self) -> None:
        for _ in range(50):
            waits = list(RetryPolicy(attempts=5, backoff=1, max_backoff=3, deadline=100).delays())
            self.assertEqual(len(waits), 4)
            for wait, high in zip(waits, (1, 2, 3, 3)):
                self.assertTrue(high / 2 <= wait <= high, waits)

    def test_no_wait_past_the_deadline(self) -> None:
        self.assertEqual(list(RetryPolicy(backoff=1, deadline=0.4).delays()), [])
        self.assertEqual(list(RetryPolicy(attempts=1).delays()), [])


class RetryTest(unittest.TestCase):
    """A Client against fake servers that drop or hang on a put."""

    def test_a_lost_reply_is_retried_with_the_same_key_and_a_duplicate_gives_the_first_id(self) -> None:
        server = FakeServer([b"USING t\r\n", CLOSE], [b"USING t\r\n", b"DUPLICATE 7\r\n"])
        with Client(HOST, server.port, retry=NO_WAIT) as client, self.assertLogs("redstalk.client") as logs:
            client.use("t")
            self.assertEqual(client.put_with(b"body", "order-17"), PutResult(7, True))
        self.assertIn("sending 1 request(s) again", logs.output[0])
        server.close()
        self.assertEqual(server.commands, [b"use t\r\n", KEYED_PUT, b"use t\r\n", KEYED_PUT])

    def test_the_new_connection_is_told_the_token_and_the_tubes(self) -> None:
        session = [b"OK\r\n", b"USING t\r\n", b"WATCHING 2\r\n", b"WATCHING 1\r\n"]
        server = FakeServer([*session, CLOSE], [*session, b"INSERTED 3\r\n", b"WATCHING 2\r\n"])
        with Client(HOST, server.port, retry=NO_WAIT) as client, self.assertLogs("redstalk.client"):
            client.auth("tok")
            client.use("t")
            client.watch("w")
            client.ignore("default")
            self.assertEqual(client.put_with(b"body", "order-17"), PutResult(3, False))
            self.assertEqual(client.watch("x"), 2)  # the client goes on, on the new connection
        server.close()
        told = [b"auth tok\r\n", b"use t\r\n", b"watch w\r\n", b"ignore default\r\n"]
        self.assertEqual(server.commands, [*told, KEYED_PUT, *told, KEYED_PUT, b"watch x\r\n"])

    def test_idempotent_put_sends_a_random_key_again_after_a_timeout(self) -> None:
        server = FakeServer([SILENT], [b"INSERTED 3\r\n"])
        with Client(HOST, server.port, timeout=0.2, idempotent=True, retry=NO_WAIT) as client:
            with self.assertLogs("redstalk.client"):
                self.assertEqual(client.put(b"body"), 3)
        server.close()
        first, again = server.commands
        self.assertRegex(first, RANDOM_KEYED_PUT)
        self.assertEqual(again, first)

    def test_pipelined_puts_send_only_the_unanswered_again(self) -> None:
        server = FakeServer([b"INSERTED 1\r\n", CLOSE], [b"INSERTED 2\r\n"])
        with Client(HOST, server.port, retry=NO_WAIT) as client, self.assertLogs("redstalk.client"):
            p = client.pipeline()
            p.put_with(b"a", "k1")
            p.put_with(b"b", "k2")
            self.assertEqual(p.execute(), [PutResult(1, False), PutResult(2, False)])
        server.close()
        self.assertEqual([c.split(b" ")[1] for c in server.commands], [b"k1", b"k2", b"k2"])

    def test_puts_without_a_key_are_never_sent_twice(self) -> None:
        for put in (lambda c: c.put(b"body"), lambda c: c.put_with(b"body")):
            server = FakeServer([CLOSE], [b"INSERTED 1\r\n"])
            with Client(HOST, server.port, retry=NO_WAIT) as client:
                with self.assertRaises(ConnectionClosed):
                    put(client)
                with self.assertRaises(ConnectionClosed):
                    client.put_with(b"body", "order-17")  # a closed client stays closed
            server.close()
            self.assertEqual(server.connections, 1)

    def test_gives_up_after_the_attempts(self) -> None:
        server = FakeServer([CLOSE], [CLOSE], [CLOSE], [b"INSERTED 1\r\n"])
        with Client(HOST, server.port, retry=RetryPolicy(attempts=3, backoff=0)) as client:
            with self.assertLogs("redstalk.client"), self.assertRaises(ConnectionClosed):
                client.put_with(b"body", "order-17")
        server.close()
        self.assertEqual((server.connections, server.commands), (3, [KEYED_PUT] * 3))


class AsyncRetryTest(unittest.IsolatedAsyncioTestCase):
    async def connect(self, server: FakeServer, **options: object) -> AsyncClient:
        client = await AsyncClient.connect(HOST, server.port, retry=NO_WAIT, **options)  # type: ignore[arg-type]
        self.addAsyncCleanup(client.close)
        return client

    async def test_a_lost_reply_is_retried_with_the_same_key(self) -> None:
        server = FakeServer([b"USING t\r\n", CLOSE], [b"USING t\r\n", b"DUPLICATE 7\r\n", b"OK\r\n"])
        client = await self.connect(server)
        await client.use("t")
        with self.assertLogs("redstalk.client"):
            self.assertEqual(await client.put_with(b"body", "order-17"), PutResult(7, True))
        self.assertIsNone(await client.tube_set("t", "dedup-window", 60))
        server.close()
        each_connection = [b"use t\r\n", KEYED_PUT]
        self.assertEqual(server.commands, [*each_connection, *each_connection, b"tube-set t dedup-window 60\r\n"])

    async def test_idempotent_put_after_a_timeout(self) -> None:
        server = FakeServer([SILENT], [b"INSERTED 3\r\n"])
        client = await self.connect(server, timeout=0.2, idempotent=True)
        with self.assertLogs("redstalk.client"):
            self.assertEqual(await client.put(b"body"), 3)
        server.close()
        self.assertRegex(server.commands[0], RANDOM_KEYED_PUT)
        self.assertEqual(server.commands[1], server.commands[0])

    async def test_a_put_without_a_key_is_not_sent_twice(self) -> None:
        server = FakeServer([CLOSE], [b"INSERTED 1\r\n"])
        client = await self.connect(server)
        with self.assertRaises(ConnectionClosed):
            await client.put(b"body")
        server.close()
        self.assertEqual(server.connections, 1)


server: Sidecar


def setUpModule() -> None:
    global server
    server = Sidecar().ready()
    unittest.addModuleCleanup(server.stop)



class LiveTest(unittest.TestCase):
    """Against the module's sidecar; each test uses and watches only its own tube."""

    def setUp(self) -> None:
        self.tube = self._testMethodName[:200]
        self.client = self.connect(server.port)

    def connect(self, port: int, **options: object) -> Client:
        client = Client(HOST, port, timeout=10, **options)  # type: ignore[arg-type]
        self.addCleanup(client.close)
        client.use(self.tube)
        client.watch(self.tube)
        client.ignore("default")
        return client

    def test_a_key_stores_one_job(self) -> None:
        c = self.client
        first = c.put_with(b"first", "order-17")
        self.assertFalse(first.duplicate)
        self.assertEqual(c.put_with(b"second", "order-17", priority=1), PutResult(first.id, True))
        self.assertEqual(c.peek(first.id).body, b"first")
        c.delete(first.id)
        self.assertEqual(c.put_with(b"third", "order-17"), PutResult(first.id, True))  # within the dedup-window
        self.assertFalse(c.put_with(b"other", "order-18").duplicate)
        stats = c.stats_tube(self.tube)
        self.assertEqual((stats["total-jobs"], stats["duplicate-puts"], stats["dedup-window"]), (2, 2, 300))

    def test_jobs_not_reserved_in_time_expire(self) -> None:
        c = self.client
        released = c.put_with(b"r", expire=1, on_expiry="bury").id
        expiring = c.put_with(b"e", expire=1).id
        buried = c.put_with(b"b", expire=1).id
        self.assertEqual(c.reserve(timeout=0).id, released)
        c.release(released)  # reserved once: it never expires
        c.reserve_job(buried)
        c.bury(buried)
        # The expiry fields are printed once one of them is not 0.
        wait_until(lambda: c.stats_tube(self.tube).get("jobs-expired") == 1)
        with self.assertRaises(NotFound):
            c.peek(expiring)
        self.assertEqual(c.stats_job(released)["state"], "ready")
        self.assertEqual(c.stats_job(buried)["state"], "buried")

    def test_expire_with_bury(self) -> None:
        c = self.client
        job_id = c.put_with(b"b", expire=1, on_expiry="bury").id
        wait_until(lambda: c.stats_job(job_id)["state"] == "buried")
        self.assertEqual(c.stats_tube(self.tube)["jobs-expired"], 1)

    def test_idempotent_client_puts(self) -> None:
        c = self.connect(server.port, idempotent=True)
        job_id = c.put(b"x")
        self.assertEqual(c.peek(job_id).body, b"x")
        self.assertFalse(c.put_with(b"y").duplicate)

    def test_a_reply_lost_after_the_job_was_stored(self) -> None:
        proxy = DroppingProxy(server.port)
        self.addCleanup(proxy.close)
        c = self.connect(proxy.port, retry=NO_WAIT)
        with self.assertLogs("redstalk.client"):
            result = c.put_with(b"x", "order-17")
        self.assertTrue(result.duplicate)
        self.assertEqual(self.client.peek(result.id).body, b"x")
        stats = self.client.stats_tube(self.tube)
        self.assertEqual((stats["total-jobs"], stats["duplicate-puts"]), (1, 1))

    def test_tube_set(self) -> None:
        c = self.client
        for _ in range(3):
            c.put(b"x")
        self.assertIsNone(c.tube_set(self.tube, "max-reserved", 1))
        c.reserve(timeout=0)
        with self.assertRaises(TimedOut):
            c.reserve(timeout=0)
        c.tube_set(self.tube, "max-reserved", 0)
        c.tube_set(self.tube, "reserve-rate", 1)
        c.reserve(timeout=0)
        with self.assertRaises(TimedOut):
            c.reserve_many(5, 0)
        c.tube_set(self.tube, "dedup-window", 3600)
        stats = c.stats_tube(self.tube)
        self.assertEqual((stats["max-reserved"], stats["reserve-rate"], stats["dedup-window"]), (0, 1, 3600))
        for setting, value in (("speed", 1), ("reserve-rate", 100001)):
            with self.subTest(setting=setting), self.assertRaises(BadFormat):
                c.tube_set(self.tube, setting, value)


class AsyncLiveTest(unittest.IsolatedAsyncioTestCase):
    async def test_put_with_and_tube_set(self) -> None:
        c = await AsyncClient.connect(HOST, server.port, timeout=10)
        self.addAsyncCleanup(c.close)
        await c.use("async-put-with")
        first = await c.put_with(b"x", "k")
        self.assertEqual(await c.put_with(b"x", "k"), PutResult(first.id, True))
        await c.tube_set("async-put-with", "max-reserved", 2)
        self.assertEqual((await c.stats_tube("async-put-with"))["max-reserved"], 2)
