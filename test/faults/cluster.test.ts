// Redis Cluster drills: a private cluster of 3 primaries and 3 replicas
// (test/helpers/cluster.ts: cluster-node-timeout 2 s, every replica always
// promotable), two sidecars as processes on its redis-cluster:// URL with
// --shards 12, producers on 12 tubes (one per shard, as far as the tube→shard
// hash goes) and workers watching all of them (load.ts), and the per-job
// ledger (ledger.ts). Two faults under load:
//   a. SIGKILL of the primary holding most of the sidecars' keys: its replica is
//      promoted, the sidecars follow without a restart. Checked: no acknowledged
//      job lost, client commands fail only from the kill until 3 s after the
//      failover (the replica reports role master, cluster_state:ok everywhere).
//   b. a live resharding: `redis-cli --cluster reshard` moves a few hundred slots,
//      among them slots holding the sidecars' keys, from one primary to another.
//      Checked: no acknowledged job lost; failed client commands are listed.
//   c. the same by atomic slot migration (Valkey 9+, `--cluster-use-atomic-slot-migration`:
//      the target takes the slots' keys in the background, then owns them all at once);
//      skipped on servers without it.
// And, without load: a sidecar with --shards 12 has keys on all 3 primaries.
//
//   npx vitest run test/faults/cluster.test.ts
//   FAULTS_FULL=1 npx vitest run test/faults/cluster.test.ts
// Post-mortem: FAULTS_LOG_DIR=<dir> (sidecar logs, and the cluster nodes' logs of a run
// with a failed check), FAULTS_SIDECAR_ARGS="--log-level debug".
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Client } from '../../clients/node/src/index.js';
import { Layout } from '../../src/store/layout.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { details, dupCell, markdownTable, type Ledger, type Report } from './ledger.js';
import { FULL, runLoad, type Endpoint, type FaultControl, type RunResult, type Sizes } from './load.js';
import { SpawnedSidecar } from './processes.js';

const TEST_TIMEOUT = FULL ? 600_000 : 150_000;
/** Far longer than a worker holds a job: a redelivery by TTR means a reservation was not handed back. */
const TTR = FULL ? 20 : 10;
const SHARDS = 12;
/**
 * 12 producers, one per tube, so every tube sees puts the whole time. CI: 12 × 20 puts/s
 * for 2 s before the fault and 3 s after it; full: 24 × 40/s (two per tube), 5 s and 8 s.
 */
const CLUSTER_SIZES: Sizes = FULL
  ? { producers: 24, workers: 12, window: 2, rate: 40, preMs: 5000, postMs: 8000, drainMs: 30_000 }
  : { producers: 12, workers: 6, window: 1, rate: 20, preMs: 2000, postMs: 3000, drainMs: 10_000 };
/** Client commands may fail from the kill until this long after the failover. */
const SLACK_MS = 3000;
/** Slots the resharding moves at least. */
const RESHARD_SLOTS = 300;
/** A failed client command: any reply but these (a closed connection included), or a failed reconnection (use / watch). */
const SUCCESS = new Set(['INSERTED', 'RESERVED', 'TIMED_OUT', 'DEADLINE_SOON', 'DELETED']);

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** `count` tube names, the i-th hashing to shard i % shards (should the mapping change, they are just 12 tubes). */
function tubesCovering(shards: number, count: number): string[] {
  const layout = new Layout('any', shards);
  return Array.from({ length: count }, (_, i) => {
    for (let k = 0; ; k++) {
      const name = `ct${i}-${k}`;
      if (layout.shardOf(name) === i % shards) return name;
    }
  });
}
const TUBES = tubesCovering(SHARDS, SHARDS);

const cleanup: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) {
    try { await f(); } catch (e) { console.error('cleanup failed:', e); }
  }
}, 60_000);

interface Figures {
  run: string;
  report: Report;
  /** What the fault took, e.g. `promoted 3400` or `300 slots 2100`. */
  fault: string;
  failed: number;
  failedBy: Record<string, number>;
  /** ms after the fault's start. */
  firstFailed: number | null;
  lastFailed: number | null;
  putsBack: number | null;
  reservesBack: number | null;
  failedChecks: string[];
}
const runs: Figures[] = [];

const ms = (v: number | null) => (v === null ? '-' : String(v));
const COLUMNS = [['run', 26], ['acked', 6], ['delivered', 9], ['lost', 4], ['dup', 14], ['failed cmds', 11], ['error window', 13],
  ['fault ms', 22], ['puts back', 9], ['reserves back', 13], ['probes back', 11]] as const;
function table(rows: Figures[]): string[] {
  return markdownTable(COLUMNS, rows.map((f) => [
    f.run, String(f.report.acked), String(f.report.delivered), String(f.report.lost), dupCell(f.report), String(f.failed),
    f.firstFailed === null ? 'none' : `${f.firstFailed}..${f.lastFailed}`, f.fault, ms(f.putsBack), ms(f.reservesBack), ms(f.report.recoverMs),
  ]));
}
const LEGEND = [
  'times in ms after the fault began (a: the SIGKILL of the primary; b, c: the start of redis-cli --cluster reshard);',
  'error window: first..last failed client command (an error reply, a closed connection, or a failed reconnection); fault ms: a: the failover done (a replica of the',
  'killed primary reports role master, cluster_state:ok on every node), b, c: the resharding done (every node agrees on the slots); puts/reserves back: the first put',
  'INSERTED / reserve RESERVED sent after the fault began; probes back: a put and a reserve on each sidecar from a connection of its own;',
  'dup: jobs delivered more than once (back: handed back early; ttr: after their TTR; DEL: after a DELETED reply, i.e. an acknowledged delete undone)',
];

afterAll(() => {
  if (!runs.length) return;
  console.log([
    '',
    `Redis Cluster drills (${FULL ? 'full' : 'CI'} size: 3 primaries + 3 replicas, 2 sidecars with --shards ${SHARDS}, ${CLUSTER_SIZES.producers} producers × ${CLUSTER_SIZES.rate} puts/s on ${TUBES.length} tubes, ${CLUSTER_SIZES.workers} workers; ${CLUSTER_SIZES.preMs} ms of load, the fault, ${CLUSTER_SIZES.postMs} ms more)`,
    ...table(runs),
    ...runs.flatMap((f) => f.failedChecks.map((c) => `  ${f.run}: FAILED: ${c}`)),
    ...LEGEND,
    '',
  ].join('\n'));
});

// ---------------------------------------------------------------- the cluster and its keys

/** A 3 + 3 cluster, stopped after the test. */
async function cluster(opts: { replicas: boolean }): Promise<TestCluster> {
  const c = await startCluster({ primaries: 3, replicasPerPrimary: opts.replicas ? 1 : 0 });
  cleanup.push(() => c.stop());
  return c;
}

/**
 * A prefix whose hash tag `{prefix:0}` lies among the first 100 slots of a primary. It is
 * the one shard's tag without --shards (and holds the shard count with it): `redis-cli
 * --cluster reshard` takes a source's lowest slots first, so a few hundred slots from that
 * primary include it. (With --shards the drill finds the shards' slots by SCAN.)
 */
async function prefixNearRangeStart(c: TestCluster): Promise<string> {
  const starts = new Map<number, number>();
  for (const p of await c.primaries()) starts.set(p, (await c.slotsOf(p))[0]!);
  for (let i = 0; i < 5000; i++) {
    const prefix = `cl${randomBytes(4).toString('hex')}`;
    const slot = await c.keySlot(`{${prefix}:0}`);
    const owner = await c.nodeOfSlot(slot);
    if (slot - starts.get(owner)! < 100) return prefix;
  }
  throw new Error('no prefix found near the start of a slot range');
}

/** Every key of the prefix on a node (SCAN MATCH on that node: its own keys only). */
async function keysOn(c: TestCluster, port: number, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = (await c.call(port, 'SCAN', cursor, 'MATCH', `*${prefix}*`, 'COUNT', 1000)) as [string, string[]];
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return keys;
}

/** The hash tag of a key (`{...}`, Redis' rule: the first `{` and the next `}`, non-empty), else the key. */
function hashTag(key: string): string {
  const open = key.indexOf('{');
  const close = open >= 0 ? key.indexOf('}', open + 1) : -1;
  return close > open + 1 ? key.slice(open, close + 1) : key;
}

interface KeyMap {
  /** Per primary port: its keys of the prefix, their hash tags, and the slots of those tags. */
  byPrimary: Map<number, { keys: number; tags: Set<string>; slots: Set<number> }>;
}

async function keyMap(c: TestCluster, prefix: string): Promise<KeyMap> {
  const byPrimary: KeyMap['byPrimary'] = new Map();
  for (const p of await c.primaries()) {
    const keys = await keysOn(c, p, prefix);
    const tags = new Set(keys.map(hashTag));
    const slots = new Set<number>();
    for (const t of tags) slots.add(await c.keySlot(t));
    byPrimary.set(p, { keys: keys.length, tags, slots });
  }
  return { byPrimary };
}

const describeMap = (m: KeyMap) => [...m.byPrimary].map(([p, v]) => `${p}: ${v.keys} keys, ${v.tags.size} tags (slots ${[...v.slots].sort((a, b) => a - b).join(',') || '-'})`).join('; ');

// ---------------------------------------------------------------- a drill

/**
 * Deletes whose error reply took effect: a later delete of the same reservation (same
 * connection) answered NOT_FOUND, and the job was never delivered again (had it gone back
 * to ready, it would have been). An unanswered delete (its connection closed) does not count.
 */
function deleteErrorsThatTookEffect(ledger: Ledger): Array<{ id: number; marker: string; via: string; replies: string[] }> {
  const out = [];
  for (const [marker, list] of ledger.deliveries) {
    for (const d of list) {
      const err = d.deleteReplies.findIndex((w) => w !== 'DELETED' && w !== 'NOT_FOUND' && w !== 'conn');
      if (err < 0 || !d.deleteReplies.slice(err + 1).includes('NOT_FOUND')) continue;
      if (list.some((other) => other.at > d.at)) continue;
      out.push({ id: d.id, marker, via: d.via, replies: d.deleteReplies });
    }
  }
  return out;
}

interface DrillOptions {
  run: string;
  /** Injects the fault (ctl.start() at its beginning); resolves to its figures cell, when it ended, and the error window's end. */
  inject(c: TestCluster, prefix: string, ctl: FaultControl): Promise<{ cell: string; done: number; notes: string[] }>;
  /** Failed client commands are only allowed from the fault's start until its end plus SLACK_MS (a), or only listed (b). */
  errorsBounded: boolean;
}

async function drill(o: DrillOptions): Promise<Figures> {
  const c = await cluster({ replicas: true });
  const prefix = await prefixNearRangeStart(c);
  const started = await Promise.allSettled(['A', 'B'].map((n) => SpawnedSidecar.start(n, c.url, prefix, ['--shards', String(SHARDS)])));
  for (const s of started) if (s.status === 'fulfilled') cleanup.push(() => s.value.stop());
  for (const s of started) if (s.status === 'rejected') throw s.reason;
  const [A, B] = started.map((s) => (s as PromiseFulfilledResult<SpawnedSidecar>).value) as [SpawnedSidecar, SpawnedSidecar];
  const endpoints: Endpoint[] = [A, B].map((s) => ({ name: s.name, port: s.port, alive: () => s.alive }));

  let begin = 0;
  let done = 0;
  let cell = '';
  const notes: string[] = [];
  const result: RunResult = await runLoad({
    fault: o.run,
    endpoints,
    ttrSec: TTR,
    sizes: CLUSTER_SIZES,
    tubes: TUBES,
    inject: async (ctl) => {
      const wrapped: FaultControl = { ...ctl, start: () => { begin = Date.now(); ctl.start(); } };
      const r = await o.inject(c, prefix, wrapped);
      if (!begin) wrapped.start();
      ({ cell, done } = r);
      notes.push(...r.notes);
    },
  });
  const r = result.report;
  r.notes.push(...notes);
  for (const sc of [A, B]) {
    const w = sc.warningSummary();
    if (w) r.notes.push(`sidecar ${sc.name} logged: ${w.slice(0, 400)}`);
    if (!sc.alive) r.notes.push(`sidecar ${sc.name} exited (${sc.exitSignal ?? sc.exitCode}): it must follow the cluster without a restart`);
  }
  r.notes.push(`the sidecars' keys at the end: ${describeMap(await keyMap(c, prefix).catch(() => ({ byPrimary: new Map() })))}`);

  // Failed client commands (a failed reconnection's use / watch too), and when puts and reserves worked again.
  const ops = result.ledger.ops;
  const failedOps = [...ops.filter((op) => !SUCCESS.has(op.result)), ...result.ledger.setupFailures];
  const failedBy: Record<string, number> = {};
  for (const op of failedOps) failedBy[`${op.op} ${op.result}`] = (failedBy[`${op.op} ${op.result}`] ?? 0) + 1;
  const times = failedOps.map((op) => op.doneAt);
  const firstBack = (op: string, word: string) => {
    const t = ops.filter((x) => x.op === op && x.result === word && x.sentAt >= begin).reduce((m, x) => Math.min(m, x.doneAt), Infinity);
    return t === Infinity ? null : t - begin;
  };
  const limit = done + SLACK_MS;
  const outside = failedOps.filter((op) => op.doneAt < begin || op.doneAt > limit);
  r.notes.push(`failed client commands: ${Object.entries(failedBy).map(([k, v]) => `${k}×${v}`).join(', ') || 'none'}`);
  // What the clients got while the fault lasted (the shards on the other primaries keep serving).
  const during: Record<string, number> = {};
  for (const op of ops) if (op.sentAt >= begin && op.sentAt <= done) during[`${op.op} ${op.result}`] = (during[`${op.op} ${op.result}`] ?? 0) + 1;
  r.notes.push(`commands sent during the fault (${done - begin} ms): ${Object.entries(during).map(([k, v]) => `${k}×${v}`).join(', ') || 'none'}`);
  // Workers send reserve-with-timeout 1: how long their answers took while the fault lasted.
  const reserves = ops.filter((op) => op.op === 'reserve' && op.sentAt >= begin && op.sentAt <= done).map((op) => op.doneAt - op.sentAt).sort((a, b) => a - b);
  if (reserves.length) r.notes.push(`reserve-with-timeout 1 sent during the fault: ${reserves.length}, answered after median ${reserves[reserves.length >> 1]} ms, longest ${reserves.at(-1)} ms`);
  if (failedOps.length) {
    const sample = [...failedOps].sort((x, y) => x.doneAt - y.doneAt).slice(0, 12);
    r.notes.push(`failed (ms after the fault began): ${sample.map((op) => `${op.op} ${op.result} by ${op.client} via ${op.via} sent ${op.sentAt - begin} failed ${op.doneAt - begin}`).join('; ')}${failedOps.length > 12 ? ` … ${failedOps.length - 12} more` : ''}`);
  }
  if (outside.length) {
    r.notes.push(`failed outside the fault .. its end + ${SLACK_MS} ms (${done - begin + SLACK_MS} ms): ${outside.slice(0, 12).map((op) => `${op.op} ${op.result} by ${op.client} via ${op.via} sent ${op.sentAt - begin} failed ${op.doneAt - begin}`).join('; ')}${outside.length > 12 ? ` … ${outside.length - 12} more` : ''}`);
  }

  const tookEffect = Object.values(r.tookEffect).reduce((a, b) => a + b, 0);
  const deletesTookEffect = deleteErrorsThatTookEffect(result.ledger);
  const checks: Array<[boolean, string]> = [
    [r.lost === 0, `${r.lost} acknowledged jobs never delivered: ${r.lostList.slice(0, 20).map((l) => `#${l.id} (${l.marker} via ${l.via}${l.state ? `, ${l.state}` : ''})`).join('; ')}`],
    [r.delivered === r.acked, `${r.acked - r.delivered} of ${r.acked} acknowledged jobs not delivered`],
    [!o.errorsBounded || outside.length === 0, `${outside.length} client commands failed outside the failover window (kill .. failover + ${SLACK_MS} ms = ${done - begin + SLACK_MS} ms): the last at ${times.length ? Math.max(...times) - begin : '-'} ms`],
    [r.dupAfterDeleted === 0, `${r.dupAfterDeleted} jobs delivered again after their delete answered DELETED (an acknowledged delete undone)`],
    [r.corrupt === 0 && r.idMismatch === 0, `${r.corrupt} bodies failed their CRC, ${r.idMismatch} jobs came back under another id than INSERTED named`],
    [tookEffect === 0, `${tookEffect} error replies took effect: ${r.tookEffectList.slice(0, 10).map((t) => `${t.word} → job #${t.id} via ${t.via}`).join('; ')}`],
    [deletesTookEffect.length === 0, `${deletesTookEffect.length} deletes answered with an error reply took effect (the next delete of the reservation answered NOT_FOUND, the job never came back): ${deletesTookEffect.slice(0, 10).map((d) => `job #${d.id} via ${d.via}: ${d.replies.join(' → ')}`).join('; ')}`],
    [r.dupTtrLapsed === 0 && result.jobTimeouts === 0, `reservations went back by their TTR: job-timeouts ${result.jobTimeouts}, redeliveries after the TTR ${r.dupTtrLapsed}`],
    [r.recoverMs !== null, 'puts and reserves never succeeded again on both sidecars'],
    [A.alive && B.alive, 'a sidecar exited: it must follow the cluster without a restart'],
  ];
  const failedChecks = checks.filter(([ok]) => !ok).map(([, what]) => what);
  for (const f of failedChecks) r.notes.push(`FAILED: ${f}`);
  // FAULTS_LOG_DIR: the nodes' logs of a run with a failed check.
  if (process.env.FAULTS_LOG_DIR && failedChecks.length) {
    for (const port of c.ports) {
      const log = path.join(c.dir, String(port), 'redis.log');
      if (existsSync(log)) copyFileSync(log, path.join(process.env.FAULTS_LOG_DIR, `cluster-${o.run.slice(0, 1)}-${begin}-${port}.log`));
    }
  }
  const figures: Figures = {
    run: o.run, report: r, fault: cell,
    failed: failedOps.length, failedBy,
    firstFailed: times.length ? Math.min(...times) - begin : null,
    lastFailed: times.length ? Math.max(...times) - begin : null,
    putsBack: firstBack('put', 'INSERTED'), reservesBack: firstBack('reserve', 'RESERVED'),
    failedChecks,
  };
  runs.push(figures);
  console.log([...table([figures]), ...details(r)].join('\n'));
  return figures;
}

// ---------------------------------------------------------------- the tests

describe.sequential(`Redis Cluster under load (${FULL ? 'full' : 'CI'} size)`, () => {
  it('a. SIGKILL of a primary: its replica is promoted, nothing acknowledged is lost, clients fail only during the failover', async () => {
    const f = await drill({
      run: 'a. primary SIGKILL',
      errorsBounded: true,
      inject: async (c, prefix, ctl) => {
        // The primary holding most of the sidecars' keys (with one shard: all of them).
        const before = await keyMap(c, prefix);
        const [victim] = [...before.byPrimary].sort((x, y) => y[1].keys - x[1].keys)[0]!;
        const replicas = await c.replicasOf(victim);
        const notes = [`before the kill: ${describeMap(before)}`];
        ctl.start();
        const kill = Date.now();
        await c.kill(victim);
        ctl.end(); // the probes time the recovery from the kill
        const { port, at } = await c.waitForFailover(victim, 60_000);
        notes.push(`killed primary ${victim} (replicas ${replicas.join(', ')}); ${port} promoted and cluster_state:ok everywhere ${at - kill} ms after the kill; primaries now ${(await c.primaries()).join(', ')}`);
        return { cell: `failover ${at - kill}`, done: at, notes };
      },
    });
    expect(f.failedChecks).toEqual([]);
  }, TEST_TIMEOUT);

  it('b. live resharding: a few hundred slots, the sidecars\' among them, move to another primary; nothing acknowledged is lost', async () => {
    const f = await drill({ run: 'b. reshard', errorsBounded: false, inject: reshardInject({ atomic: false }) });
    expect(f.failedChecks).toEqual([]);
  }, TEST_TIMEOUT);

  it('c. live resharding by atomic slot migration (Valkey 9+): the same slots move at once; nothing acknowledged is lost', async (ctx) => {
    if (!atomicSlotMigration()) ctx.skip();
    const f = await drill({ run: 'c. atomic reshard', errorsBounded: false, inject: reshardInject({ atomic: true }) });
    expect(f.failedChecks).toEqual([]);
  }, TEST_TIMEOUT);
});

/** Whether the redis-server on PATH moves slots atomically (CLUSTER MIGRATESLOTS): Valkey 9 and later. */
function atomicSlotMigration(): boolean {
  const m = /^Valkey server v=(\d+)\./.exec(spawnSync('redis-server', ['--version'], { encoding: 'utf8' }).stdout ?? '');
  return m !== null && Number(m[1]) >= 9;
}

/**
 * The resharding fault: `redis-cli --cluster reshard` (atomic: by atomic slot migration)
 * moves a few hundred slots, among them slots of the sidecars' keys, to another primary.
 */
function reshardInject(opts: { atomic: boolean }): DrillOptions['inject'] {
  return async (c, prefix, ctl) => {
    // The source: the primary with a slot of the sidecars' keys nearest the start of its slots
    // (redis-cli takes a source's lowest slots first); as many slots as it takes to include it.
    const before = await keyMap(c, prefix);
    let best: { port: number; slot: number; rank: number } | null = null;
    for (const [port, v] of before.byPrimary) {
      const owned = await c.slotsOf(port);
      for (const slot of v.slots) {
        const rank = owned.indexOf(slot);
        if (rank >= 0 && (!best || rank < best.rank)) best = { port, slot, rank };
      }
    }
    if (!best) throw new Error(`no key of prefix ${prefix} found on any primary: ${describeMap(before)}`);
    const primaries = await c.primaries();
    const to = primaries[(primaries.indexOf(best.port) + 1) % primaries.length]!;
    const count = Math.max(RESHARD_SLOTS, best.rank + 50);
    const ownedBefore = new Set(await c.slotsOf(best.port));
    const keySlots = [...before.byPrimary.get(best.port)!.slots];
    ctl.start();
    const t0 = Date.now();
    const { output, ms: took } = await c.reshard(best.port, to, count, opts);
    const at = Date.now();
    ctl.end();
    const ownedAfter = new Set(await c.slotsOf(to));
    const moved = keySlots.filter((s) => ownedAfter.has(s));
    const movedAll = [...ownedBefore].filter((s) => ownedAfter.has(s));
    const notes = [
      `before: ${describeMap(before)}`,
      `moved ${movedAll.length} slots (${Math.min(...movedAll)}..${Math.max(...movedAll)}) from ${best.port} to ${to} in ${took} ms${opts.atomic ? ' by atomic slot migration' : ''} (redis-cli ${output.split('\n').filter((l) => l.startsWith('Moving slot')).length} "Moving slot" lines), among them the slots of the sidecars' keys ${moved.join(',') || 'NONE'} (slot ${best.slot} was #${best.rank} of the source's)`,
    ];
    // The drill's own premise: the sidecars' keys were among those that moved.
    if (!moved.length) throw new Error(`the resharding moved none of the sidecars' key slots: ${notes.join('; ')}`);
    return { cell: `${movedAll.length} slots ${at - t0}`, done: at, notes };
  };
}

describe('--shards on a cluster', () => {
  it('a sidecar with --shards 12 keeps keys on all 3 primaries', async () => {
    const c = await cluster({ replicas: false });
    const prefix = `cs${randomBytes(4).toString('hex')}`;
    const s = await SpawnedSidecar.start('S', c.url, prefix, ['--shards', String(SHARDS)]);
    cleanup.push(() => s.stop());
    const client = await Client.connect({ port: s.port, timeoutMs: 5000 });
    cleanup.push(() => client.close());
    const tubes = Array.from({ length: 24 }, (_, i) => `spread-${i}`);
    for (const t of tubes) {
      await client.use(t);
      await client.put(`job for ${t}`, { ttr: 60 });
    }
    await sleep(200);
    const m = await keyMap(c, prefix);
    const tags = new Set([...m.byPrimary.values()].flatMap((v) => [...v.tags]));
    console.log(`--shards ${SHARDS}, 24 tubes: ${tags.size} hash tags; per primary: ${describeMap(m)}`);
    const withKeys = [...m.byPrimary.values()].filter((v) => v.keys > 0).length;
    // Passes only once --shards takes effect (until then every key shares the one tag {prefix:0},
    // on one primary): with 12 shards spread over the evenly split cluster, every primary holds some.
    expect(withKeys, `primaries holding keys of the prefix: ${describeMap(m)}`).toBe(3);
  }, 120_000);
});
