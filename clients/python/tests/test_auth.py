"""auth <token> against a redstalk started with --auth-token: OK, UNAUTHORIZED for a wrong
token and for any command before auth, the connection closed after three wrong tokens, and
a Worker that authenticates first."""

from __future__ import annotations

import threading
import time
import unittest

from redstalk import AsyncClient, Client, ConnectionClosed, Job, TimedOut, Unauthorized, Worker

from .servers import HOST, Sidecar

TOKEN = "s3cr3t-Token_42"
server: Sidecar


def setUpModule() -> None:
    global server
    server = Sidecar(args=("--auth-token", TOKEN)).ready()
    unittest.addModuleCleanup(server.stop)


class AuthTest(unittest.TestCase):
    def connect(self) -> Client:
        client = server.client(timeout=10)
        self.addCleanup(client.close)
        return client

    def test_right_token_then_commands_run(self) -> None:
        c = self.connect()
        self.assertIsNone(c.auth(TOKEN))
        self.assertEqual(c.list_tube_used(), "default")
        c.use("auth-ok")
        job_id = c.put(b"hello")
        self.assertEqual(c.peek(job_id), Job(job_id, b"hello"))
        c.delete(job_id)

    def test_wrong_token_is_unauthorized_and_a_retry_may_succeed(self) -> None:
        c = self.connect()
        with self.assertRaises(Unauthorized) as caught:
            c.auth("nope")
        self.assertEqual(caught.exception.word, "UNAUTHORIZED")
        self.assertNotIn("nope", str(caught.exception))
        c.auth(TOKEN)
        self.assertEqual(c.list_tube_used(), "default")

    def test_every_command_before_auth_is_unauthorized(self) -> None:
        c = self.connect()
        with self.assertRaises(Unauthorized):
            c.list_tube_used()
        with self.assertRaises(Unauthorized):
            c.put(b"stats")  # its body is read (not run as a command): the connection stays in step
        with self.assertRaises(Unauthorized):
            c.use("other")
        with self.assertRaises(Unauthorized):
            c.reserve(timeout=0)
        p = c.pipeline()
        p.stats()
        p.auth(TOKEN)
        p.list_tube_used()
        refused, authed, used = p.execute()
        self.assertIsInstance(refused, Unauthorized)
        self.assertEqual((authed, used), (None, "default"))  # none of the refused commands ran
        with self.assertRaises(TimedOut):
            c.reserve(timeout=0)

    def test_three_wrong_tokens_close_the_connection(self) -> None:
        c = self.connect()
        for wrong in ("nope", TOKEN + "x", "s3cr3t"):
            with self.assertRaises(Unauthorized):
                c.auth(wrong)
        with self.assertRaises(ConnectionClosed):
            c.connection.read_reply(timeout=5)  # the server closed after its third answer
        # Another connection is not affected.
        other = self.connect()
        other.auth(TOKEN)
        self.assertEqual(other.list_tube_used(), "default")

    def test_tokens_that_would_break_the_framing_are_not_sent(self) -> None:
        c = self.connect()
        for bad in ("", "two words", "line\r\nstats", "caf\u00e9", "x" * 218):
            with self.subTest(token=bad[:20]), self.assertRaises(ValueError) as caught:
                c.auth(bad)
            if bad:
                self.assertNotIn(bad, str(caught.exception))
        with self.assertRaises(Unauthorized):
            c.auth("x" * 216 + "!")  # the longest token a 224-byte command line holds (a wrong one)
        c.auth(TOKEN)  # one failure so far: the connection is still open

    def test_a_server_without_a_token_accepts_any(self) -> None:
        with Sidecar() as open_server:
            with open_server.client(timeout=10) as c:
                self.assertEqual(c.list_tube_used(), "default")
                c.auth("anything")
                self.assertEqual(c.list_tube_used(), "default")


class AsyncAuthTest(unittest.IsolatedAsyncioTestCase):
    async def test_auth(self) -> None:
        c = await AsyncClient.connect(HOST, server.port, timeout=10)
        self.addAsyncCleanup(c.close)
        with self.assertRaises(Unauthorized):
            await c.stats()
        with self.assertRaises(Unauthorized):
            await c.auth("nope")
        await c.auth(TOKEN)
        self.assertEqual(await c.list_tube_used(), "default")


class WorkerAuthTest(unittest.TestCase):
    def test_worker_with_the_token_handles_a_job(self) -> None:
        tube = "auth-worker"
        producer = server.client(timeout=10)
        self.addCleanup(producer.close)
        producer.auth(TOKEN)
        producer.use(tube)
        job_id = producer.put(b"authorized work")

        seen: list[Job] = []
        worker = Worker(seen.append, host=HOST, port=server.port, tubes=[tube], reserve_timeout=1, auth_token=TOKEN)
        thread = threading.Thread(target=worker.run, kwargs={"handle_signals": False}, daemon=True)
        thread.start()
        until = time.monotonic() + 15
        while producer.stats_tube(tube)["cmd-delete"] < 1:
            self.assertLess(time.monotonic(), until, "the job was not handled")
            time.sleep(0.05)
        worker.stop()
        thread.join(10)
        self.assertFalse(thread.is_alive(), "worker did not stop")
        self.assertEqual(seen, [Job(job_id, b"authorized work")])

    def test_worker_without_the_token_fails(self) -> None:
        errors: list[BaseException] = []

        def run(worker: Worker) -> None:
            try:
                worker.run(handle_signals=False)
            except BaseException as err:  # noqa: BLE001
                errors.append(err)

        for token in (None, "wrong"):
            with self.subTest(token=token):
                errors.clear()
                worker = Worker(print, host=HOST, port=server.port, tubes=["auth-none"], auth_token=token)
                thread = threading.Thread(target=run, args=(worker,), daemon=True)
                thread.start()
                thread.join(10)
                self.assertFalse(thread.is_alive(), "worker did not fail")
                self.assertEqual(len(errors), 1)
                self.assertIsInstance(errors[0], Unauthorized)
