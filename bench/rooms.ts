// Waiting-room benchmark (npm run bench:rooms; results in bench/ROOMS.md).
//
// Starts its own redis-server (no persistence) and a redstalk sidecar process,
// fills one room with 1k, then 100k, then 1M people waiting (pipelined `enter`
// over the protocol), and at each size measures with N concurrent protocol
// clients, each with one command in flight:
//   check       a random person in line checks in (WAITING <position> <eta>)
//   enter       a random person in line enters again (still waiting)
//   join+leave  a newcomer enters at the end of the line, then leaves (the line keeps its length)
// plus Redis' own time per script call (INFO commandstats, fcall). The cost
// of a check should not grow with the line: the ratio 1M / 1k is printed.
// Each phase runs --repeat times and the best run counts: on a shared machine
// other processes only ever make a run slower.
//
//   npx tsx bench/rooms.ts [--sizes 1000,100000,1000000] [--seconds 5] [--clients 32] [--repeat 3]
import { writeFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startRedis } from '../test/helpers/redis.js';
import { ROOT, spawnRedstalk } from '../test/helpers/redstalk.js';
import { Wire } from '../test/helpers/wire.js';

const { values: flags } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1000,100000,1000000' },
    seconds: { type: 'string', default: '5' },
    clients: { type: 'string', default: '32' },
    repeat: { type: 'string', default: '3' },
  },
});
const SIZES = flags.sizes.split(',').map(Number);
const PHASE_MS = Number(flags.seconds) * 1000;
const CLIENTS = Number(flags.clients);
const REPEAT = Number(flags.repeat);
const ROOM = 'bench';
/** Pipelined enters per write while filling, per fill connection. */
const FILL_BATCH = 1000;
const FILL_CONNECTIONS = 4;
/** Filling 1M people takes well under a minute here; give up long before anyone waits forever. */
const FILL_DEADLINE_MS = 10 * 60_000;

interface Phase { opsPerSecond: number; redisUsPerCall: number }
interface Row { waiting: number; fillOpsPerSecond: number; usedMemoryBytes: number; check: Phase; enter: Phase; joinLeave: Phase }

const user = (i: number) => `u${i}`;

/** Pipelined enters of users [from, to), FILL_BATCH per write, over a few connections. */
async function fill(wires: Wire[], from: number, to: number, deadline: number): Promise<void> {
  let next = from;
  await Promise.all(wires.map(async (w) => {
    while (next < to) {
      if (Date.now() > deadline) throw new Error(`filling the room took longer than ${FILL_DEADLINE_MS / 1000} s`);
      const start = next;
      const end = Math.min(to, start + FILL_BATCH);
      next = end;
      let batch = '';
      for (let i = start; i < end; i++) batch += `enter ${ROOM} ${user(i)}\r\n`;
      w.send(batch);
      for (let i = start; i < end; i++) {
        const reply = await w.line(30_000);
        if (!reply.startsWith('WAITING ')) throw new Error(`enter ${user(i)}: ${reply}`);
      }
    }
  }));
}

/** The best of REPEAT runs of a phase: the highest ops/s, the lowest Redis µs per call. */
async function phase(wires: Wire[], redis: Redis, step: (w: Wire, client: number, n: number) => Promise<number>): Promise<Phase> {
  const runs: Phase[] = [];
  for (let i = 0; i < REPEAT; i++) runs.push(await run(wires, redis, step));
  return {
    opsPerSecond: Math.max(...runs.map((r) => r.opsPerSecond)),
    redisUsPerCall: Math.min(...runs.map((r) => r.redisUsPerCall)),
  };
}

/** Each client runs `step` back to back for PHASE_MS; returns ops/s and Redis µs per script call. */
async function run(wires: Wire[], redis: Redis, step: (w: Wire, client: number, n: number) => Promise<number>): Promise<Phase> {
  await redis.config('RESETSTAT');
  const started = Date.now();
  const end = started + PHASE_MS;
  const counts = await Promise.all(wires.map(async (w, client) => {
    let ops = 0;
    for (let n = 0; Date.now() < end; n++) ops += await step(w, client, n);
    return ops;
  }));
  const elapsed = (Date.now() - started) / 1000;
  const stats = /cmdstat_fcall:calls=(\d+),usec=(\d+)/.exec(await redis.info('commandstats'));
  const calls = Number(stats?.[1] ?? 0);
  return {
    opsPerSecond: Math.round(counts.reduce((a, b) => a + b, 0) / elapsed),
    redisUsPerCall: calls > 0 ? Number((Number(stats![2]) / calls).toFixed(2)) : 0,
  };
}

/** Sends a command; its reply must match. */
async function ask(w: Wire, command: string, reply: RegExp): Promise<void> {
  const got = await w.cmd(command);
  if (!reply.test(got)) throw new Error(`${command}: ${got}`);
}

async function main(): Promise<void> {
  const redisServer = await startRedis();
  const sidecar = await spawnRedstalk(['--redis', redisServer.url, '--log-level', 'warn']);
  const redis = new Redis(redisServer.url);
  const wires = await Promise.all(Array.from({ length: Math.max(CLIENTS, FILL_CONNECTIONS) }, () => Wire.connect(sidecar.port)));
  const rows: Row[] = [];
  const redisVersion = /redis_version:(\S+)/.exec(await redis.info('server'))![1]!;
  try {
    // Capacity 1 and long timeouts: everyone but the first waits, and nobody lapses.
    await ask(wires[0]!, `room-config ${ROOM} 1 86400 86400 0`, /^OK$/);
    await ask(wires[0]!, `enter ${ROOM} inside`, /^ENTERED$/);
    const clients = wires.slice(0, CLIENTS);
    const rnd = (n: number) => Math.floor(Math.random() * n);
    let filled = 0;
    let warm = false;
    for (const size of SIZES) {
      const fillStart = Date.now();
      await fill(wires.slice(0, FILL_CONNECTIONS), filled, size, fillStart + FILL_DEADLINE_MS);
      const fillOpsPerSecond = Math.round((size - filled) / ((Date.now() - fillStart) / 1000));
      filled = size;
      const waiting = Number(/waiting: (\d+)/.exec(await wires[0]!.cmd(`stats-room ${ROOM}`))![1]);
      if (waiting !== size) throw new Error(`expected ${size} waiting, stats-room says ${waiting}`);
      const usedMemoryBytes = Number(/used_memory:(\d+)/.exec(await redis.info('memory'))![1]);
      if (!warm) {
        // Unrecorded: the sidecar's JIT would otherwise make the first size look slower.
        await run(clients, redis, async (w) => {
          await ask(w, `check ${ROOM} ${user(rnd(size))}`, /^WAITING \d+ \d+$/);
          return 1;
        });
        warm = true;
      }
      const check = await phase(clients, redis, async (w) => {
        await ask(w, `check ${ROOM} ${user(rnd(size))}`, /^WAITING \d+ \d+$/);
        return 1;
      });
      const enter = await phase(clients, redis, async (w) => {
        await ask(w, `enter ${ROOM} ${user(rnd(size))}`, /^WAITING \d+ \d+$/);
        return 1;
      });
      const joinLeave = await phase(clients, redis, async (w, client, n) => {
        const newcomer = `new${size}-${client}-${n}`;
        await ask(w, `enter ${ROOM} ${newcomer}`, /^WAITING \d+ \d+$/);
        await ask(w, `leave ${ROOM} ${newcomer}`, /^LEFT$/);
        return 2;
      });
      rows.push({ waiting: size, fillOpsPerSecond, usedMemoryBytes, check, enter, joinLeave });
      console.log(`${size} waiting: check ${check.opsPerSecond}/s (${check.redisUsPerCall} µs in Redis), enter ${enter.opsPerSecond}/s, join+leave ${joinLeave.opsPerSecond}/s`);
    }
  } finally {
    for (const w of wires) w.close();
    redis.disconnect();
    await sidecar.stop();
    await redisServer.stop();
  }
  report(rows, redisVersion);
}

function report(rows: Row[], redisVersion: string): void {
  const n = (x: number) => x.toLocaleString('en-US');
  const lines = [
    '',
    `| waiting | check ops/s | enter ops/s | join+leave ops/s | check µs in Redis | enter µs in Redis | join+leave µs in Redis | fill enters/s | Redis memory |`,
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map((r) => `| ${n(r.waiting)} | ${n(r.check.opsPerSecond)} | ${n(r.enter.opsPerSecond)} | ${n(r.joinLeave.opsPerSecond)} | `
      + `${r.check.redisUsPerCall} | ${r.enter.redisUsPerCall} | ${r.joinLeave.redisUsPerCall} | ${n(r.fillOpsPerSecond)} | ${(r.usedMemoryBytes / 2 ** 20).toFixed(0)} MiB |`),
  ];
  const first = rows[0]!;
  const last = rows[rows.length - 1]!;
  const ratios = {
    checkOpsPerSecond: Number((last.check.opsPerSecond / first.check.opsPerSecond).toFixed(2)),
    checkRedisUsPerCall: Number((last.check.redisUsPerCall / first.check.redisUsPerCall).toFixed(2)),
    enterOpsPerSecond: Number((last.enter.opsPerSecond / first.enter.opsPerSecond).toFixed(2)),
    enterRedisUsPerCall: Number((last.enter.redisUsPerCall / first.enter.redisUsPerCall).toFixed(2)),
  };
  lines.push('', `${n(last.waiting)} / ${n(first.waiting)} waiting: check ops/s x${ratios.checkOpsPerSecond}, `
    + `check µs in Redis x${ratios.checkRedisUsPerCall}, enter ops/s x${ratios.enterOpsPerSecond}, enter µs in Redis x${ratios.enterRedisUsPerCall}`);
  const within2x = {
    checkThroughput: 1 / ratios.checkOpsPerSecond <= 2,
    checkRedisTime: ratios.checkRedisUsPerCall <= 2,
  };
  const verdict = (ok: boolean) => (ok ? 'within 2x' : 'NOT within 2x');
  lines.push(`check throughput through the protocol: ${verdict(within2x.checkThroughput)}; `
    + `Redis time per check (ZRANK and the check-in's ZADD are O(log n)): ${verdict(within2x.checkRedisTime)}`);
  console.log(lines.join('\n'));
  const out = path.join(ROOT, 'bench/results/rooms.json');
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify({
    command: `npx tsx bench/rooms.ts --sizes ${SIZES.join(',')} --seconds ${PHASE_MS / 1000} --clients ${CLIENTS} --repeat ${REPEAT}`,
    machine: { cpus: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version, redis: redisVersion, loadAverageAtEnd: os.loadavg() },
    date: new Date().toISOString(),
    rows, ratios, within2x,
  }, null, 2)}\n`);
  console.log(`\nwrote ${path.relative(ROOT, out)}`);
}

await main();
