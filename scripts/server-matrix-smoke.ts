// The start of scripts/server-matrix.sh for one server: the redis-server first
// on PATH, started on a free loopback port (test/helpers/redis.ts, never 6379),
// what it says it is (INFO server), and a sidecar on it (in this process) that
// puts and reserves one job. Prints one JSON line:
//   {"name":"redis"|"valkey","version":"8.0.6","startup":"ok"} or {..., "startup":"<the error>"}
// Exits 0 either way (the matrix prints what happened); 2 when no server starts.
import { Redis } from 'ioredis';
import { Client } from '../clients/node/src/index.js';
import { createServer } from '../src/index.js';
import { startRedis } from '../test/helpers/redis.js';

const redis = await startRedis().catch((err: Error) => {
  console.log(JSON.stringify({ name: 'none', version: '', startup: `redis-server did not start: ${err.message}` }));
  process.exit(2);
});
const admin = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
let out: { name: string; version: string; startup: string } = { name: '?', version: '?', startup: 'ok' };
try {
  await admin.connect();
  const info = Object.fromEntries((await admin.info('server')).split('\r\n').filter((l) => l.includes(':')).map((l) => l.split(/:(.*)/s).slice(0, 2)));
  // Valkey answers redis_version 7.2.4 (for clients that check it) and says what it is in server_name and valkey_version.
  const name = info.server_name ?? 'redis';
  out = { name, version: info[`${name}_version`] ?? info.redis_version ?? '?', startup: 'ok' };
  const server = await createServer({ redisUrl: redis.url, listen: '127.0.0.1', port: 0, prefix: 'matrix-smoke', logLevel: 'silent' });
  try {
    const client = await Client.connect({ host: '127.0.0.1', port: server.port, timeoutMs: 10_000 });
    try {
      const id = await client.put('smoke', { ttr: 60 });
      const job = await client.reserveWithTimeout(5);
      if (job.id !== id) throw new Error(`put ${id}, reserved ${job.id}`);
      await client.delete(id);
    } finally {
      await client.close();
    }
  } finally {
    await server.close();
  }
} catch (err) {
  out.startup = (err instanceof Error ? err.message : String(err)).split('\n')[0]!;
} finally {
  admin.disconnect();
  await redis.stop();
}
console.log(JSON.stringify(out));
