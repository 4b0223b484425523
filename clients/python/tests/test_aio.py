"""The asyncio client: the shared commands awaited, pipelines, tasks sharing one client."""

from __future__ import annotations

import asyncio
import unittest

from redstalk import AsyncClient, ConnectionClosed, Job, NotFound, RoomState, TimedOut

from .servers import HOST, Sidecar

server: Sidecar


def setUpModule() -> None:
    global server
    server = Sidecar().ready()
    unittest.addModuleCleanup(server.stop)


class AsyncClientTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        self.tube = self._testMethodName
        self.client = await self.connect()

    async def connect(self) -> AsyncClient:
        client = await AsyncClient.connect(HOST, server.port, timeout=10)
        self.addAsyncCleanup(client.close)
        await client.use(self.tube)
        await client.watch(self.tube)
        await client.ignore("default")
        return client

    async def test_jobs_stats_and_errors(self) -> None:
        c = self.client
        job_id = await c.put(b"a\r\nb\0", priority=3)
        self.assertEqual(await c.peek(job_id), Job(job_id, b"a\r\nb\0"))
        self.assertEqual((await c.stats_job(job_id))["tube"], self.tube)
        self.assertEqual(await c.list_tubes_watched(), [self.tube])
        self.assertEqual([j.id for j in await c.reserve_many(5, 0)], [job_id])
        await c.delete(job_id)
        with self.assertRaises(NotFound):
            await c.delete(job_id)
        with self.assertRaises(TimedOut):
            await c.reserve(timeout=0)
        self.assertEqual((await c.enter(self.tube, "ann")).state, RoomState.ENTERED)

    async def test_pipeline(self) -> None:
        p = self.client.pipeline()
        p.put(b"x")
        p.delete_many([10**9])
        p.peek(10**9)
        inserted, missing, not_found = await p.execute()
        self.assertIsInstance(inserted, int)
        self.assertEqual(missing, [10**9])
        self.assertIsInstance(not_found, NotFound)

    async def test_tasks_share_one_client_and_a_blocked_reserve_blocks_no_one_else(self) -> None:
        worker = await self.connect()
        reserved = asyncio.create_task(worker.reserve(timeout=5))
        ids = await asyncio.gather(*(self.client.put(f"{n}") for n in range(20)))
        self.assertEqual(len(set(ids)), 20)
        self.assertEqual((await reserved).id, min(ids))

    async def test_quit(self) -> None:
        client = await self.connect()
        await client.quit()
        with self.assertRaises(ConnectionClosed):
            await client.stats()
