// redstalk reshard: moves every job of a data set into a new one with another
// shard count (--shards is fixed when a data set is created: tubes and ids
// would be looked for in the wrong shards). Offline: stop the sidecars of the
// source first. It opens both data sets in this process, drains the source
// tube by tube into a journal file (each job written and synced before it is
// deleted: drain-to's guarantee) and loads the journal into the target, so a
// crash midway loses nothing: `redstalk load <journal>` finishes the move.
// Jobs get new ids; reserved jobs (held by a client still connected) stay.
import { closeSync, fsyncSync, openSync, readFileSync, writeSync } from 'node:fs';
import type { Command } from 'commander';
import { Client } from '../../../clients/node/src/index.js';
import { drainTube, loadJob, parseLine } from './transfer.js';

interface ReshardOptions { redis: string; prefix: string; toPrefix: string; shards: string; journal?: string; json?: boolean }

/** The shard count recorded for a data set (1 for one written before counts were recorded), or null when it has none. */
async function recordedShards(url: string, prefix: string): Promise<number | null> {
  const { connectRedis } = await import('../../store/redis/connect.js');
  const { Layout } = await import('../../store/layout.js');
  const redis = connectRedis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    const layout = new Layout(prefix);
    const recorded = await redis.get(layout.shardCountKey);
    if (recorded) return Number(recorded);
    return (await redis.exists(layout.oneShardSeqKey)) ? 1 : null;
  } finally {
    redis.disconnect();
  }
}

export function addReshardCommand(program: Command): void {
  program.command('reshard')
    .description('move every job of a data set into a new data set with another shard count (offline: stop its sidecars first)')
    .requiredOption('--redis <url>', 'the Redis (or Redis Cluster) holding both data sets')
    .requiredOption('--prefix <prefix>', 'the data set to move from')
    .requiredOption('--to-prefix <prefix>', 'the data set to move into (new, or with the same shard count)')
    .requiredOption('--shards <n>', 'the shard count of the new data set')
    .option('--journal <file>', 'where the moving jobs are written first (default: reshard-<prefix>-<time>.jsonl)')
    .option('--json', 'print JSON')
    .action(async (o: ReshardOptions) => {
      const shards = Number(o.shards);
      if (o.toPrefix === o.prefix) throw new Error('--to-prefix must differ from --prefix (the two data sets exist side by side while jobs move)');
      const from = await recordedShards(o.redis, o.prefix);
      if (from === null) throw new Error(`no data set at prefix "${o.prefix}"`);
      const { createServer } = await import('../../index.js');
      const open = (prefix: string, n: number) => createServer({ redisUrl: o.redis, prefix, shards: n, listen: '127.0.0.1', port: 0, logLevel: 'warn' });
      const source = await open(o.prefix, from);
      const target = await open(o.toPrefix, shards);
      const journal = o.journal ?? `reshard-${o.prefix}-${Date.now()}.jsonl`;
      const moved = { ready: 0, delayed: 0, buried: 0, reservedLeft: 0, tubes: 0 };
      try {
        const src = await Client.connect({ host: '127.0.0.1', port: source.port, timeoutMs: 30_000 });
        const dst = await Client.connect({ host: '127.0.0.1', port: target.port, timeoutMs: 30_000 });
        try {
          const fd = openSync(journal, 'a');
          try {
            for (const tube of await src.listTubes()) {
              const n = await drainTube(src, tube, (j) => writeSync(fd, `${JSON.stringify(j)}\n`));
              moved.ready += n.ready; moved.delayed += n.delayed; moved.buried += n.buried;
              moved.tubes++;
            }
            fsyncSync(fd);
          } finally {
            closeSync(fd);
          }
          const lines = readFileSync(journal, 'utf8').split('\n');
          for (const [i, line] of lines.entries()) {
            if (line.trim() === '') continue;
            const j = parseLine(line, `${journal}:${i + 1}`);
            await dst.use(j.tube);
            await loadJob(dst, j);
          }
          moved.reservedLeft = (await src.stats())['current-jobs-reserved'];
        } finally {
          await src.close();
          await dst.close();
        }
      } finally {
        await source.close();
        await target.close();
      }
      const say = `moved ${moved.ready} ready, ${moved.delayed} delayed and ${moved.buried} buried jobs of ${moved.tubes} tubes`
        + ` from "${o.prefix}" (${from} shard${from === 1 ? '' : 's'}) to "${o.toPrefix}" (${shards}); journal ${journal}`
        + (moved.reservedLeft ? `; ${moved.reservedLeft} reserved jobs stayed (held by connected clients)` : '');
      process.stdout.write(o.json ? `${JSON.stringify({ ...moved, from, to: shards, journal })}\n` : `${say}\n`);
    });
}
