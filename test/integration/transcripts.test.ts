// Every conformance transcript of protocol/transcripts/ holds on redstalk, each on a
// fresh server (a new key prefix), as the clients under clients/ replay them.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { ROOT, startRedstalk } from '../helpers/redstalk.js';
import { loadTranscripts, matchesReply, replay } from '../transcripts/format.js';

const transcripts = loadTranscripts(path.join(ROOT, 'protocol/transcripts'));

describe('protocol/transcripts', () => {
  let redis: TestRedis;
  beforeAll(async () => { redis = await startRedis(); });
  afterAll(async () => { await redis?.stop(); });

  it('covers the beanstalkd scenarios and the extensions', () => {
    expect(transcripts.length).toBeGreaterThan(100);
    expect(new Set(transcripts.map((t) => t.file))).toContain('extensions.txt');
  });

  it('a wildcard matches one line\'s worth of bytes and no more', () => {
    expect(matchesReply('OK {*}\\r\\n---\\nage: {*}\\n\\r\\n', 'OK 12\\r\\n---\\nage: 3\\n\\r\\n')).toBe(true);
    expect(matchesReply('WAITING 1 {*}\\r\\n', 'WAITING 1 3\\r\\nX\\r\\n')).toBe(false);
    expect(matchesReply('WAITING 1 {*}\\r\\n', 'WAITING 1 \\r\\n')).toBe(true);
    expect(matchesReply('INSERTED 1\\r\\n', 'INSERTED 2\\r\\n')).toBe(false);
    expect(matchesReply('OK {*}\\r\\n', 'OK 1\\r\\nx\\r\\n')).toBe(false);
  });

  it('every transcript replays on a fresh redstalk', async () => {
    const failures: string[] = [];
    for (const t of transcripts) {
      const sidecar = await startRedstalk({ redisUrl: redis.url });
      try {
        const why = await replay(t, sidecar.port);
        if (why) failures.push(why);
      } finally {
        await sidecar.stop();
      }
    }
    expect(failures).toEqual([]);
  }, 120_000);
});
