// Properties of the server over TCP, against a real sidecar process (its RSS
// is read from /proc) on a private redis-server, under generated hostile input
// (./hostile.ts): random bytes, lines cut short or over 224 bytes, put bodies
// longer and shorter than announced, NULs, huge declared sizes, garbage
// pipelined with valid commands, connections dropped (FIN or RST) mid-command.
//
// The hostile-input run (CI: about HOSTILE_SECONDS, 30; PROPERTY_FULL=1: until
// 1,000,000 commands), case after case of 1-3 connections at once:
//  - the process never crashes, and a fresh connection is answered after every case;
//  - every connection's replies are the ones the framing model (./model.ts)
//    allows, one per command, in order (all of them when the client ends with EOF);
//  - another client's jobs (guards in a tube no session can name, by ids no
//    session can name: ready, delayed, buried, reserved) are never touched;
//  - the RSS after the run is within RSS_BOUND_MIB of the RSS after a warm-up.
// Overlong lines are framed as beanstalkd frames them (224-byte windows; the
// "overlong lines" property compares with the real beanstalkd). The two EOF
// bugs this found (a reserve sent before a half-close waited for ever; a
// connection whose last command was batched stayed open after EOF) are fixed
// and held by the "after EOF" properties; the main run still drops, rather
// than half-closes, connections with a waiting reserve, and only counts a
// connection left open after EOF.
//
// HOSTILE_DEBUG=1 prints each failing connection as it is found;
// HOSTILE_SIDECAR_NODE_OPTIONS passes NODE_OPTIONS to the sidecar (e.g.
// --heapsnapshot-signal=SIGUSR2 --diagnostic-dir=/tmp to compare heaps).
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasBeanstalkd, startBeanstalkd, type TestBeanstalkd } from '../helpers/beanstalkd.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { spawnRedstalk, type SpawnedSidecar } from '../helpers/redstalk.js';
import { Wire, yamlMap } from '../helpers/wire.js';
import { IdBook, runSession, session, type SessionPlan, type SessionResult } from './hostile.js';
import { LINE_BYTES } from './model.js';

const FULL = !!process.env.PROPERTY_FULL;
const TARGET_COMMANDS = FULL ? 1_000_000 : Number(process.env.HOSTILE_COMMANDS ?? Infinity);
const BUDGET_MS = FULL ? Infinity : Number(process.env.HOSTILE_SECONDS ?? 30) * 1000;
/** RSS after the run <= RSS after the warm-up + this. */
const RSS_BOUND_MIB = 32;
const WARMUP_COMMANDS = FULL ? 50_000 : 10_000;

let redis: TestRedis;
let sidecar: SpawnedSidecar;
let port: number;

const GUARD_TUBE = `guard(${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)})`;
interface Guard { id: string; body: string; stats: Record<string, string> }
const guards: Guard[] = [];
let guardConn: Wire;
let guardTubeStats: Record<string, string>;
const ids = new IdBook();

const JOB_FIELDS = ['id', 'tube', 'state', 'pri', 'delay', 'ttr', 'reserves', 'timeouts', 'releases', 'buries', 'kicks'];
const TUBE_FIELDS = ['name', 'current-jobs-urgent', 'current-jobs-ready', 'current-jobs-reserved', 'current-jobs-delayed', 'current-jobs-buried',
  'total-jobs', 'current-using', 'current-watching', 'current-waiting', 'cmd-delete', 'cmd-pause-tube', 'pause'];
const pick = (m: Record<string, string>, keys: string[]): Record<string, string> => Object.fromEntries(keys.map((k) => [k, m[k] ?? '(missing)']));

function rssKiB(): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${sidecar.child.pid}/status`, 'utf8');
  return { rss: Number(/VmRSS:\s+(\d+)/.exec(status)![1]), hwm: Number(/VmHWM:\s+(\d+)/.exec(status)![1]) };
}
const mib = (kib: number) => `${(kib / 1024).toFixed(1)} MiB`;

async function reply(w: Wire): Promise<string> {
  const r = await w.reply(10_000);
  return r.body === undefined ? r.line : `${r.line}\n${r.body.toString('latin1')}`;
}

/** Guard jobs of another client: ready, delayed, buried, and one it has reserved. */
async function makeGuards(): Promise<void> {
  guardConn = await Wire.connect(port);
  // Use up a few thousand ids first, so that guard ids are numbers the generators do not write by chance.
  guardConn.send('put 0 0 1 1\r\nx\r\n'.repeat(2000));
  const burnt: string[] = [];
  for (let i = 0; i < 2000; i++) burnt.push((await guardConn.line()).split(' ')[1]!);
  guardConn.send(burnt.map((i) => `delete ${i}\r\n`).join(''));
  for (let i = 0; i < 2000; i++) expect(await guardConn.line()).toBe('DELETED');

  expect(await guardConn.cmd(`use ${GUARD_TUBE}`)).toBe(`USING ${GUARD_TUBE}`);
  const put = async (delay: number, ttr: number, kind: string) => {
    const body = `guard ${kind} \r\n\0 ${Math.random()}`;
    const r = await guardConn.cmd(`put 7 ${delay} ${ttr} ${body.length}\r\n${body}`);
    expect(r).toMatch(/^INSERTED \d+$/);
    return { id: r.split(' ')[1]!, body };
  };
  const ready = await put(0, 3600, 'ready');
  const delayed = await put(1_000_000, 3600, 'delayed');
  const buried = await put(0, 3600, 'buried');
  expect(await guardConn.cmd(`reserve-job ${buried.id}`)).toBe(`RESERVED ${buried.id} ${buried.body.length}\n${buried.body}`);
  expect(await guardConn.cmd(`bury ${buried.id} 9`)).toBe('BURIED');
  const reserved = await put(0, 1_000_000, 'reserved');
  expect(await guardConn.cmd(`reserve-job ${reserved.id}`)).toBe(`RESERVED ${reserved.id} ${reserved.body.length}\n${reserved.body}`);
  for (const g of [ready, delayed, buried, reserved]) {
    guards.push({ ...g, stats: pick(yamlMap(await guardConn.cmd(`stats-job ${g.id}`)), JOB_FIELDS) });
  }
  expect(guards.map((g) => g.stats.state)).toEqual(['ready', 'delayed', 'buried', 'reserved']);
  guardTubeStats = pick(yamlMap(await guardConn.cmd(`stats-tube ${GUARD_TUBE}`)), TUBE_FIELDS);
  ids.protect(guards.map((g) => g.id));
}

/** The process is up; a fresh connection is answered; the guards are as they were. */
async function checkServer(): Promise<void> {
  if (sidecar.child.exitCode !== null || sidecar.child.signalCode !== null) {
    throw new Error(`the sidecar exited (${sidecar.child.exitCode ?? sidecar.child.signalCode}):\n${sidecar.output().slice(-4000)}`);
  }
  const w = await Wire.connect(port);
  try {
    w.send(['list-tube-used', ...guards.flatMap((g) => [`peek ${g.id}`, `stats-job ${g.id}`]), `stats-tube ${GUARD_TUBE}`].map((c) => `${c}\r\n`).join(''));
    expect(await w.line(10_000), 'a fresh connection').toBe('USING default');
    for (const g of guards) {
      expect(await reply(w), `guard job ${g.id}`).toBe(`FOUND ${g.id} ${g.body.length}\n${g.body}`);
      expect(pick(yamlMap(await reply(w)), JOB_FIELDS), `guard job ${g.id}`).toEqual(g.stats);
    }
    expect(pick(yamlMap(await reply(w)), TUBE_FIELDS), 'guard tube').toEqual(guardTubeStats);
  } finally {
    w.close();
  }
  expect(await guardConn.cmd('list-tube-used', 10_000), 'the guard connection').toBe(`USING ${GUARD_TUBE}`);
}

beforeAll(async () => {
  redis = await startRedis();
  sidecar = await spawnRedstalk(['--redis', redis.url, '--prefix', 'prop', '--log-level', 'warn'],
    process.env.HOSTILE_SIDECAR_NODE_OPTIONS ? { NODE_OPTIONS: process.env.HOSTILE_SIDECAR_NODE_OPTIONS } : {});
  port = sidecar.port;
  await makeGuards();
}, 60_000);

afterAll(async () => {
  guardConn?.close();
  await sidecar?.stop();
  await redis?.stop();
});

describe('the server under hostile input', () => {
  it(`keeps answering, answers as the model allows, leaves other clients' jobs alone, and keeps its RSS bounded (${FULL ? '1,000,000 commands' : `${BUDGET_MS / 1000} s`})`, async () => {
    const guardJob = new RegExp(`^(?:FOUND|RESERVED) (?:${guards.map((g) => g.id).join('|')}) `);
    const stats = { cases: 0, sessions: 0, commands: 0, bytes: 0, knownBug: 0, notClosed: 0, replies: new Map<string, number>() };
    const started = Date.now();
    const timing = { sessions: 0, check: 0 };
    const rssStart = rssKiB();
    let rssWarm: { rss: number; hwm: number } | null = null;
    let peak = rssStart.rss;
    const trace: string[] = [];
    const traceEvery = FULL ? 100_000 : 25_000;
    let nextTrace = traceEvery;

    const property = fc.asyncProperty(fc.array(session(400), { minLength: 1, maxLength: 3 }), async (plans: SessionPlan[]) => {
      const t0 = performance.now();
      const results: SessionResult[] = await Promise.all(plans.map((p) => runSession(port, p, ids)));
      timing.sessions += performance.now() - t0;
      stats.cases++;
      for (const r of results) {
        stats.sessions++;
        stats.commands += r.commands;
        stats.bytes += r.sent.length;
        if (r.knownBug) stats.knownBug++;
        if (r.notClosed) stats.notClosed++;
        const seen = r.units.flatMap((u) => [u, ...(u.jobs ?? [])]).find((u) => guardJob.test(u.line));
        if (seen) r.error ??= `a session was handed a guard job: ${seen.line}`;
        for (const u of r.units) {
          const w = u.line.split(' ')[0]!;
          stats.replies.set(w, (stats.replies.get(w) ?? 0) + 1);
        }
        if (r.error) {
          if (process.env.HOSTILE_DEBUG) console.error(r.error);
          throw new Error(r.error);
        }
      }
      const t1 = performance.now();
      await checkServer();
      timing.check += performance.now() - t1;
      if (!rssWarm && stats.commands >= WARMUP_COMMANDS) rssWarm = rssKiB();
      const now = rssKiB().rss;
      peak = Math.max(peak, now);
      if (stats.commands >= nextTrace) {
        trace.push(`${Math.round(stats.commands / 1000)}k: ${mib(now)}`);
        nextTrace += traceEvery;
      }
    });

    let runs = 0;
    while (stats.commands < TARGET_COMMANDS && Date.now() - started < BUDGET_MS) {
      await fc.assert(property, { numRuns: 20 });
      runs += 20;
    }
    await checkServer();
    const rssEnd = rssKiB();
    const seconds = (Date.now() - started) / 1000;
    const warm = rssWarm ?? rssStart;
    const top = [...stats.replies].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(', ');
    console.log([
      `hostile input: ${stats.commands} commands (${(stats.bytes / 1e6).toFixed(1)} MB) in ${stats.cases} cases, ${stats.sessions} connections, ${seconds.toFixed(1)} s`,
      `  replies checked against the model on every connection; ${stats.knownBug} met the known overlong-line bug`,
      `  answered everything after EOF but not closed (known bug): ${stats.notClosed} connections`,
      `  replies: ${top}`,
      `  time in sessions ${(timing.sessions / 1000).toFixed(1)} s, in checks ${(timing.check / 1000).toFixed(1)} s`,
      `  sidecar RSS by commands run: ${trace.join(', ')}`,
      `  sidecar RSS: start ${mib(rssStart.rss)}, after ${WARMUP_COMMANDS} commands ${mib(warm.rss)}, peak seen ${mib(peak)}, end ${mib(rssEnd.rss)} (VmHWM ${mib(rssEnd.hwm)}); bound: end <= ${mib(warm.rss)} + ${RSS_BOUND_MIB} MiB`,
    ].join('\n'));
    const log = sidecar.output().trim();
    if (log) console.log(`sidecar log (${log.split('\n').length} lines), last lines:\n${log.split('\n').slice(-5).join('\n').slice(0, 3000)}`);
    expect(stats.commands).toBeGreaterThan(FULL ? 999_999 : 1000);
    expect(rssEnd.rss, 'RSS after the run, KiB').toBeLessThanOrEqual(warm.rss + RSS_BOUND_MIB * 1024);
    expect(runs).toBeGreaterThan(0);
  }, FULL ? 3_600_000 : BUDGET_MS + 60_000);

  it('no connection outlives its client: after the run, the server holds only the connections still open', async () => {
    // Cases of its own first, so that this holds when it runs alone (-t).
    await fc.assert(fc.asyncProperty(fc.array(session(100), { minLength: 1, maxLength: 3 }), async (plans: SessionPlan[]) => {
      await Promise.all(plans.map((p) => runSession(port, p, ids)));
    }), { numRuns: 30 });
    await new Promise((r) => setTimeout(r, 1000));
    const w = await Wire.connect(port);
    try {
      const s = yamlMap(await w.cmd('stats'));
      // Open now: the guard connection and this one; waiting: none.
      expect({ 'current-connections': Number(s['current-connections']) - 2, 'current-waiting': Number(s['current-waiting']) }, 'connections the server kept beyond those open')
        .toEqual({ 'current-connections': 0, 'current-waiting': 0 });
    } finally {
      w.close();
    }
  });
});

/** One connection that sends `ops` and then EOF, held to the documented behaviour. */
const strictly = async (ops: string[], closeTimeoutMs = 3000) => {
  const r = await runSession(port, { ops, end: 'eof', cut: 1, writes: [], linger: 0 }, ids, { strict: true, closeTimeoutMs });
  if (r.error) throw new Error(r.error);
};

describe.skipIf(!hasBeanstalkd)('overlong lines: framed as beanstalkd frames them (224-byte windows, scan_line_end), compared with the real beanstalkd', () => {
  const overlong = fc.record({
    start: fc.constantFrom('', 'use ', 'put 0 0 1 ', 'watch ', 'list-tube-used'),
    length: fc.integer({ min: LINE_BYTES - 3, max: 1200 }),
    fill: fc.constantFrom('x', 'a', '0', ' '),
    cr: fc.option(fc.nat(), { freq: 2, nil: undefined }),
  }).map(({ start, length, fill, cr }) => {
    let l = (start + fill.repeat(length)).slice(0, length);
    if (cr !== undefined) { const i = cr % l.length; l = `${l.slice(0, i)}\r${l.slice(i + 1)}`; }
    return `${l}\r\n`;
  });
  const next = fc.constantFrom('list-tube-used\r\n', 'use after\r\n', 'stats-tube default\r\n');
  let reference: TestBeanstalkd;
  beforeAll(async () => { reference = await startBeanstalkd(); });
  afterAll(async () => { await reference?.stop(); });

  /** What a server sends back within 300 ms to these bytes (no EOF: some inputs leave it waiting for a line end). */
  async function replies(to: number, bytes: string): Promise<string> {
    const w = await Wire.connect(to);
    try {
      w.send(Buffer.from(bytes, 'latin1'));
      await new Promise((r) => setTimeout(r, 300));
      return (await w.silent(0)) ? '' : (await w.bytes((w as unknown as { buf: Buffer }).buf.length, 0)).toString('latin1').replace(/OK \d+\r\n---\n[^]*?\r\n/g, 'OK <yaml>\r\n');
    } finally {
      w.close();
    }
  }

  it('get the same replies from redstalk as from beanstalkd, followed by a command or not', async () => {
    await fc.assert(fc.asyncProperty(overlong, fc.option(next, { nil: '' }), async (l, n) => {
      expect(await replies(port, l + n)).toBe(await replies(reference.port, l + n));
    }), { numRuns: 30 });
  }, 120_000);
});

describe('after EOF (PROTOCOL.md: EOF closes a connection; connection.ts: every complete command is answered first)', () => {
  const command = fc.constantFrom(
    'put 0 0 60 1\r\nx\r\n', 'put 1 0 60 2\r\nab\r\n', 'list-tube-used\r\n', 'use t1\r\n', 'watch t2\r\n', 'peek-ready\r\n',
    'stats-tube default\r\n', 'delete 999999999\r\n', 'reserve-with-timeout 0\r\n', 'kick 1\r\n',
  );

  it('the connection closes once every command is answered', async () => {
    await fc.assert(fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 6 }), async (ops) => strictly(ops)), { numRuns: 100 });
  });

  it('every reserve that waits ends with TIMED_OUT, and the connection closes', async () => {
    const empty = `empty${Math.random().toString(36).replace(/[0-9.]/g, '')}`;
    const waiting = fc.constantFrom('reserve\r\n', 'reserve-with-timeout 1000\r\n', 'reserve-many 2 1000\r\n', 'list-tube-used\r\n', 'peek-ready\r\n');
    await fc.assert(fc.asyncProperty(fc.array(waiting, { minLength: 1, maxLength: 5 }), async (ops) => {
      await strictly([`watch ${empty}\r\nignore default\r\n`, ...ops], 1500);
    }), { numRuns: 50 });
  });
});
