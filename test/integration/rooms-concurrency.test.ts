// Many sidecars, one truth: 200 clients spread over two sidecars on one Redis
// play random enter / check / leave in one room per seed (150 users, so some
// users are driven by two clients at once). While they run, the room never
// holds more than its capacity; at rest, the line's positions are unique and
// contiguous, and every answer matches the state in Redis.
// ROOM_SEEDS=1-200 explores more seeds.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Layout } from '../../src/store/layout.js';
import { onCluster, testShards } from '../helpers/topology.js';
import { mulberry32, parseSeeds } from '../differential/random.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startRedstalk, uniquePrefix, type TestSidecar } from '../helpers/redstalk.js';
import { Wire, yamlMap } from '../helpers/wire.js';

const CLIENTS = 200;
const USERS = 150;
const OPS_PER_CLIENT = 12;
const SEEDS = parseSeeds(process.env.ROOM_SEEDS ?? '1-25');

let redis: TestRedis;
let sidecars: TestSidecar[];
let wires: Wire[];
let probe: Redis;
let layout: Layout;

beforeAll(async () => {
  redis = await startRedis();
  const prefix = uniquePrefix();
  layout = new Layout(prefix, testShards);
  sidecars = [await startRedstalk({ redisUrl: redis.url, prefix }), await startRedstalk({ redisUrl: redis.url, prefix })];
  wires = await Promise.all(Array.from({ length: CLIENTS }, (_, i) => Wire.connect(sidecars[i % 2]!.port)));
  probe = new Redis(redis.url);
});

afterAll(async () => {
  for (const w of wires) w.close();
  probe.disconnect();
  for (const s of sidecars) await s.stop();
  await redis.stop();
});

const REPLY_SHAPES: Record<string, RegExp> = {
  enter: /^(ENTERED|WAITING [1-9]\d* \d+)$/,
  check: /^(READY|WAITING [1-9]\d* \d+)$/,
  leave: /^(LEFT|NOT_FOUND)$/,
};

// It reads the room's keys in its own redis-server: not on the test cluster.
describe.skipIf(onCluster)('waiting room under concurrency: 200 clients, 2 sidecars, one Redis', () => {
  for (const seed of SEEDS) {
    it(`seed ${seed}`, async () => {
      const rnd = mulberry32(seed);
      const pick = (n: number) => Math.floor(rnd() * n);
      const room = `prop${seed}`;
      const capacity = 1 + pick(25);
      const grace = rnd() < 0.5 ? 0 : 30;
      expect(await wires[0]!.cmd(`room-config ${room} ${capacity} 30 30 ${grace}`)).toBe('OK');
      const [, , kInside, kTickets, kLine, kSeen] = layout.keys(layout.shardOf(room)).room(room);

      // Each client's commands, drawn up front so a seed always means the same plan.
      const plans = wires.map(() => Array.from({ length: OPS_PER_CLIENT }, () => {
        const r = rnd();
        const verb = r < 0.45 ? 'enter' : r < 0.8 ? 'check' : 'leave';
        return `${verb} ${room} u${pick(USERS)}`;
      }));

      let running = true;
      let samples = 0;
      let mostOccupied = 0;
      const sampler = (async () => {
        while (running) {
          const [[, inside], [, tickets]] = (await probe.multi().zcard(kInside!).zcard(kTickets!).exec()) as [[null, number], [null, number]];
          mostOccupied = Math.max(mostOccupied, inside + tickets);
          samples++;
        }
      })();
      const badReplies: string[] = [];
      await Promise.all(wires.map(async (w, i) => {
        for (const command of plans[i]!) {
          const reply = await w.cmd(command);
          if (!REPLY_SHAPES[command.split(' ')[0]!]!.test(reply)) badReplies.push(`${command} -> ${reply}`);
        }
      }));
      running = false;
      await sampler;
      expect(badReplies).toEqual([]);
      expect(samples).toBeGreaterThan(0);
      expect(mostOccupied).toBeLessThanOrEqual(capacity);

      // At rest: the state in Redis is consistent...
      const [inside, tickets, line, seen] = await Promise.all([
        probe.zrange(kInside!, 0, -1), probe.zrange(kTickets!, 0, -1), probe.zrange(kLine!, 0, -1), probe.zrange(kSeen!, 0, -1),
      ]);
      expect(inside.length + tickets.length).toBeLessThanOrEqual(capacity);
      expect([...seen].sort()).toEqual([...line].sort());
      const everyone = [...inside, ...tickets, ...line];
      expect(new Set(everyone).size).toBe(everyone.length);

      // ...and checking everyone at once, through both sidecars, gives each
      // waiting person their exact rank: READY within the open places, then
      // WAITING 1..n after them, each position once.
      const open = Math.max(0, capacity - inside.length - tickets.length);
      const answers = await Promise.all(line.map((u, i) => wires[i % CLIENTS]!.cmd(`check ${room} ${u}`)));
      const expected = line.map((_, rank) => (rank + 1 <= open ? 'READY' : `WAITING ${rank + 1}`));
      expect(answers.map((a) => a.replace(/^(WAITING \d+) \d+$/, '$1'))).toEqual(expected);
      const insideAnswers = await Promise.all(inside.map((u, i) => wires[i % CLIENTS]!.cmd(`check ${room} ${u}`)));
      expect(insideAnswers.every((a) => a === 'READY')).toBe(true);

      for (const w of [wires[0]!, wires[1]!]) {
        const s = yamlMap(await w.cmd(`stats-room ${room}`));
        expect([s.participants, s.tickets, s.waiting].map(Number)).toEqual([inside.length, tickets.length, line.length]);
      }
    });
  }
});
