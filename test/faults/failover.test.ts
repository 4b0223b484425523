// The Sentinel failover drill: a primary and one replica (AOF, fsync always,
// both), three Sentinels (down-after 1 s, failover-timeout 3 s), two sidecars
// as processes on the redis-sentinel:// URL, producers and workers on both
// (load.ts), and the per-job ledger (ledger.ts). Under load the primary gets
// SIGKILL; Sentinel promotes the replica; the sidecars follow without a
// restart; the old primary comes back on its port and folder as a replica of
// the new one, so that --min-replicas can be met again. Four runs:
//   a. --min-replicas 1
//   b. no --min-replicas (figures only: acknowledged writes may be lost there)
//   c. --min-replicas 1, the replica's link to its primary 10 ms late each way
//      (a proxy; at the kill, what it holds is dropped: the primary's host is gone)
//   d. as c without --min-replicas (figures only: the contrast to c)
// Checked for a and c: no acknowledged job lost (nor an acknowledged delete
// undone), and client commands fail only from the kill until 3 s after the
// promotion (the replica reporting role:master).
//
//   npx vitest run test/faults/failover.test.ts
//   FAULTS_FULL=1 npx vitest run test/faults/failover.test.ts
// Post-mortem: FAULTS_LOG_DIR=<dir> (sidecar logs; Redis and Sentinel logs of a run that
// went unexpectedly), FAULTS_SIDECAR_ARGS="--log-level debug", FAULTS_DRILL_DUMP=<prefix>;
// FAULTS_SENTINEL_DOWN_AFTER_MS (1000).
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { details, dupCell, markdownTable, type Report } from './ledger.js';
import { FULL, runLoad, SIZES, type Endpoint, type RunResult, type Sizes } from './load.js';
import { FaultRedis, SpawnedSidecar } from './processes.js';
import {
  admin, DelayProxy, pinnedLinkArgs, replicationInfo, SentinelProc, sentinelMaster, sentinelPrimaryPort, until,
} from './sentinels.js';

const TEST_TIMEOUT = FULL ? 600_000 : 120_000;
/** Far longer than a worker holds a job: a redelivery by TTR means a reservation was not handed back. */
const TTR = FULL ? 20 : 10;
/** The load around the kill; the drain is short, for the lost jobs of runs b and d never come. */
const DRILL_SIZES: Sizes = FULL ? { ...SIZES, drainMs: 30_000 } : { ...SIZES, postMs: 3000, drainMs: 5000 };
const SENTINEL_TIMINGS = { downAfterMs: Number(process.env.FAULTS_SENTINEL_DOWN_AFTER_MS ?? 1000), failoverTimeoutMs: 3000 };
const MIN_REPLICAS_TIMEOUT_MS = 1000;
/** Client commands may fail from the kill until this long after the promotion. */
const SLACK_MS = 3000;
/** A failed client command: any reply but these (a closed connection included), or a failed reconnection (use / watch). */
const SUCCESS = new Set(['INSERTED', 'RESERVED', 'TIMED_OUT', 'DEADLINE_SOON', 'DELETED']);

const cleanup: Array<() => Promise<unknown> | unknown> = [];
/** Stops what the test started (by PID), the last started first. */
async function cleanUp(): Promise<void> {
  for (const f of cleanup.splice(0).reverse()) {
    try { await f(); } catch (e) { console.error('cleanup failed:', e); }
  }
}
afterEach(cleanUp, 60_000);

interface Figures {
  run: string;
  report: Report;
  /** ms after the kill. */
  promoted: number;
  /** How many times Sentinel switched the primary (1 in the drill as designed). */
  failovers: number;
  sentinelsSwitched: number;
  rejoined: number;
  failed: number;
  failedBy: Record<string, number>;
  firstFailed: number | null;
  lastFailed: number | null;
  putsBack: number | null;
  reservesBack: number | null;
  failedChecks: string[];
}

const runs: Figures[] = [];

const ms = (v: number | null) => (v === null ? '-' : String(v));
const COLUMNS = [['run', 34], ['acked', 6], ['delivered', 9], ['lost', 4], ['dup', 17], ['failed cmds', 11], ['error window', 13],
  ['promoted', 8], ['puts back', 9], ['reserves back', 13], ['probes back', 11], ['failovers', 9]] as const;
function table(rows: Figures[]): string[] {
  return markdownTable(COLUMNS, rows.map((f) => [
    f.run, String(f.report.acked), String(f.report.delivered), String(f.report.lost), dupCell(f.report), String(f.failed),
    f.firstFailed === null ? 'none' : `${f.firstFailed}..${f.lastFailed}`, String(f.promoted), ms(f.putsBack), ms(f.reservesBack), ms(f.report.recoverMs), String(f.failovers),
  ]));
}
const LEGEND = [
  'times in ms after the SIGKILL of the primary; error window: first..last failed client command (when it failed: an error reply or a closed connection);',
  'promoted: the replica reports role:master; puts/reserves back: the first put INSERTED / reserve RESERVED sent after the primary exited; probes back: a put and a reserve on each sidecar from a connection of its own;',
  'dup: jobs delivered more than once (back: handed back early; ttr: after their TTR; DEL: after a DELETED reply, i.e. an acknowledged delete undone)',
];

afterAll(() => {
  if (!runs.length) return;
  console.log([
    '',
    `Sentinel failover drill (${FULL ? 'full' : 'CI'} size: ${DRILL_SIZES.producers} producers × ${DRILL_SIZES.rate} puts/s, ${DRILL_SIZES.workers} workers, 2 sidecars; ${DRILL_SIZES.preMs} ms of load, SIGKILL of the primary, ${DRILL_SIZES.postMs} ms more once the old primary is back as a replica)`,
    ...table(runs),
    ...runs.flatMap((f) => f.failedChecks.map((c) => `  ${f.run}: FAILED: ${c}`)),
    ...LEGEND,
    '',
  ].join('\n'));
});

/** `12:34:56.789` of a Sentinel log line, as a time today (the log has the date too). */
function logTime(l: string): number | null {
  const m = /^\d+:X (\d+ \w+ \d+ \d\d:\d\d:\d\d\.\d+)/.exec(l);
  return m ? Date.parse(m[1]!) : null;
}

/** The tube's keys and the global counters in Redis (the current primary), for a run that left something behind. */
async function whatRedisHolds(r: Redis, prefix: string): Promise<string> {
  const t = `{${prefix}:0}`;
  const tube = `${t}:tube:faults`;
  try {
    const [meta, ready, delayed, buried, reserved, stats] = await Promise.all([
      r.hgetall(tube), r.zcard(`${tube}:ready`), r.zcard(`${tube}:delayed`), r.zcard(`${tube}:buried`),
      r.zrange(`${t}:reserved`, 0, 20, 'WITHSCORES'), r.hgetall(`${t}:stats`),
    ]);
    return `in Redis: tube meta ${JSON.stringify(meta)}, ready ${ready}, delayed ${delayed}, buried ${buried}; reserved (member, due) ${JSON.stringify(reserved)}; stats ${JSON.stringify(stats)}`;
  } catch (e) {
    return `in Redis: could not look (${String(e)})`;
  }
}

interface DrillOptions { run: string; minReplicas: number; delayMs: number; strict: boolean }

async function drill(o: DrillOptions): Promise<Figures> {
  const pinned = o.delayMs > 0;
  // repl-diskless-sync-delay 0: Redis 7 waits 5 s by default before it sends a full sync (for more
  // replicas to join it); with --min-replicas 1 and one replica, every write would wait that long.
  const base = ['--loglevel', 'notice', '--logfile', 'redis.log', '--repl-diskless-sync-delay', '0', '--latency-monitor-threshold', '100', ...(pinned ? pinnedLinkArgs() : [])];

  // Primary, and the replica (through the delaying proxy for runs c, d), in sync.
  const primary = await FaultRedis.start(base);
  cleanup.push(() => primary.stop());
  const link1 = o.delayMs ? await DelayProxy.start(primary.port, o.delayMs) : null;
  if (link1) cleanup.push(() => link1.close());
  const replica = await FaultRedis.start([...base, '--replicaof', '127.0.0.1', String(link1?.port ?? primary.port)]);
  cleanup.push(() => replica.stop());
  const conns: Redis[] = [];
  const connect = (port: number) => {
    const r = admin(port);
    r.on('error', () => {});
    conns.push(r);
    return r;
  };
  cleanup.push(() => { for (const c of conns) c.disconnect(); });
  const replicaAdmin = connect(replica.port);
  await until('the replica in sync', async () => (await replicationInfo(replicaAdmin)).master_link_status === 'up', 20_000);

  // Three Sentinels; the sidecars start meanwhile (they ask the Sentinels for the primary).
  const startedSentinels = await Promise.allSettled([0, 1, 2].map(() => SentinelProc.start(primary.port, SENTINEL_TIMINGS, pinned)));
  for (const s of startedSentinels) if (s.status === 'fulfilled') cleanup.push(() => s.value.stop());
  for (const s of startedSentinels) if (s.status === 'rejected') throw s.reason;
  const sentinels = startedSentinels.map((s) => (s as PromiseFulfilledResult<SentinelProc>).value);
  const sentinelAdmins = sentinels.map((s) => connect(s.port));
  const url = `redis-sentinel://${sentinels.map((s) => `127.0.0.1:${s.port}`).join(',')}?master=mymaster`;
  const prefix = `fo${randomBytes(4).toString('hex')}`;
  const extra = o.minReplicas ? ['--min-replicas', String(o.minReplicas), '--min-replicas-timeout-ms', String(MIN_REPLICAS_TIMEOUT_MS)] : [];
  const [started] = await Promise.all([
    Promise.allSettled([SpawnedSidecar.start('A', url, prefix, extra), SpawnedSidecar.start('B', url, prefix, extra)]),
    // Each Sentinel knows the replica and the two others (a failover needs a majority of them).
    until('the Sentinels know the replica and each other', async () => {
      const masters = await Promise.all(sentinelAdmins.map(sentinelMaster));
      return masters.every((m) => m['num-slaves'] === '1' && m['num-other-sentinels'] === '2' && m.flags === 'master');
    }, 30_000, 100),
  ]);
  for (const s of started) if (s.status === 'fulfilled') cleanup.push(() => s.value.stop());
  for (const s of started) if (s.status === 'rejected') throw s.reason;
  const [A, B] = started.map((s) => (s as PromiseFulfilledResult<SpawnedSidecar>).value) as [SpawnedSidecar, SpawnedSidecar];
  const endpoints: Endpoint[] = [A, B].map((s) => ({ name: s.name, port: s.port, alive: () => s.alive }));

  let kill = 0;
  let dead = 0;
  let promoted = 0;
  let rejoined = 0;
  let switched = 0;
  // Set during the fault: the old primary's delaying proxy (runs c, d) and an admin link to it.
  const after: { link2: DelayProxy | null; oldAdmin: Redis | null } = { link2: null, oldAdmin: null };
  const result: RunResult = await runLoad({
    fault: o.run,
    endpoints,
    ttrSec: TTR,
    sizes: DRILL_SIZES,
    inject: async (ctl) => {
      const before = await replicationInfo(replicaAdmin);
      if (before.master_link_status !== 'up' || (link1 && before.master_port !== String(link1.port))) {
        throw new Error(`the replica is not linked as the drill needs before the kill: ${JSON.stringify(before)}`);
      }
      ctl.start();
      kill = Date.now();
      // With a late link the primary's host goes with it: what the proxy holds never reaches the
      // replica (else the bytes on the wire would arrive after the kill, and the lag would not matter).
      link1?.sever();
      await primary.kill9();
      dead = Date.now(); // it has exited: what succeeds from now on was served by the new primary
      ctl.end(); // the probes time the recovery from the kill
      promoted = await until('the replica reports role:master', async () => (await replicationInfo(replicaAdmin)).role === 'master', 60_000, 20);
      // The old primary back on its port and folder (its AOF), as a replica of the new primary.
      // Sentinel would turn a returning primary into a replica itself, but only after it has
      // reported role:master for 8 s (+convert-to-slave, at its next INFO: ~10 s); with
      // --min-replicas 1 every write would fail that long. So it starts as one, as an operator or a
      // chart's start script does (replicaof the current primary); Sentinel then lists it as such.
      if (o.delayMs) {
        const l2 = await DelayProxy.start(replica.port, o.delayMs);
        after.link2 = l2;
        cleanup.push(() => l2.close());
      }
      primary.extraArgs = [...base, '--replicaof', '127.0.0.1', String(after.link2?.port ?? replica.port)];
      const restarting = Date.now();
      await primary.launch();
      const restarted = Date.now();
      const old = connect(primary.port);
      after.oldAdmin = old;
      [rejoined, switched] = await Promise.all([
        until('the old primary in sync with the new one', async () => (await replicationInfo(old)).master_link_status === 'up', 30_000, 20),
        until('every Sentinel names the new primary', async () => (await Promise.all(sentinelAdmins.map(sentinelPrimaryPort))).every((p) => p === replica.port), 30_000, 50),
      ]);
      ctl.note(`promoted ${promoted - kill} ms after the kill; old primary restarted ${restarting - kill}..${restarted - kill} ms, in sync ${rejoined - kill} ms; every Sentinel names the new primary ${switched - kill} ms`);
    },
  });

  // Sentinel's view of the failover, from its log (the leader's events, relative to the kill).
  const events = sentinels.flatMap((s, i) => s.events().map((l) => ({ s: i, t: logTime(l), l })))
    .filter((e) => e.t !== null && e.t >= kill - 1000 && /\+(sdown master|odown|elected-leader|selected-slave|promoted-slave|switch-master|failover-end|tilt)|-failover-abort|\+fix-slave-config|\+convert-to-slave/.test(e.l));
  const seen = new Map<string, number>();
  for (const e of events) {
    const name = /([+-][\w-]+)/.exec(e.l.slice(e.l.indexOf(' # ') >= 0 ? e.l.indexOf(' # ') : e.l.indexOf(' * ')))![1]!;
    if (!seen.has(name)) seen.set(name, e.t! - kill);
  }
  const r = result.report;
  // Every failover Sentinel made (a second one: the new primary looked down to the Sentinels in turn).
  const switches = new Map<string, number>();
  for (const s of sentinels) {
    for (const l of s.events()) {
      const m = /\+switch-master \S+ \S+ (\d+) \S+ (\d+)/.exec(l);
      const t = logTime(l);
      if (m && t !== null && t >= kill - 1000) {
        const name = (port: string) => (port === String(primary.port) ? 'old primary' : port === String(replica.port) ? 'replica' : port);
        const key = `${name(m[1]!)} → ${name(m[2]!)}`;
        switches.set(key, Math.min(switches.get(key) ?? Infinity, t - kill));
      }
    }
  }
  if (switches.size !== 1) {
    r.notes.push(`Sentinel failed over ${switches.size} times: ${[...switches].map(([k, v]) => `${k} at ${v} ms`).join(', ')}${pinned
      ? ' (with the links pinned to their proxies the Sentinels cannot make the demoted primary a replica: the split does not heal, and these figures show that, not redstalk)' : ''}`);
  }
  // Stalls of either node (LATENCY LATEST, events of 100 ms or more): what makes the Sentinels think a node is down.
  const stalls: string[] = [];
  for (const [who, conn] of [['replica', replicaAdmin], ['old primary', after.oldAdmin]] as const) {
    try {
      const latest = (await conn!.call('LATENCY', 'LATEST')) as Array<[string, number, number, number]>;
      for (const [event, , last, max] of latest) stalls.push(`${who} ${event} max ${max} ms (last ${last} ms)`);
    } catch { /* not answered */ }
  }
  if (stalls.length) r.notes.push(`stalls (LATENCY LATEST): ${stalls.join('; ')}`);
  // Where the old primary replicates from now, and what the Sentinels make of it.
  const { link2, oldAdmin } = after;
  const oldInfo = await replicationInfo(oldAdmin!);
  const asReplica = ((await sentinelAdmins[0]!.call('SENTINEL', 'REPLICAS', 'mymaster')) as string[][])
    .map((flat) => Object.fromEntries(flat.flatMap((v, i) => (i % 2 ? [] : [[v, flat[i + 1]]]))) as Record<string, string>)
    .find((rep) => rep.port === String(primary.port));
  r.notes.push(`at the end the old primary is ${oldInfo.role} of 127.0.0.1:${oldInfo.master_port} (link ${oldInfo.master_link_status}); Sentinel lists it as ${asReplica ? `${asReplica.flags}, master-link-status ${asReplica['master-link-status']}` : 'nothing'}`);
  r.notes.push(`Sentinel (first of any, ms after the kill): ${[...seen].sort((x, y) => x[1] - y[1]).map(([k, v]) => `${k} ${v}`).join(', ') || 'no events logged'}`);
  if (link1) r.notes.push(`delaying proxies (${o.delayMs} ms each way): replica→primary ${link1.connections} connections, ${link1.bytesUp}/${link1.bytesDown} bytes up/down, ${link1.dropped} bytes on the wire dropped at the kill; old primary→new primary ${link2?.connections} connections, ${link2?.bytesUp}/${link2?.bytesDown} bytes`);
  for (const sc of [A, B]) {
    const w = sc.warningSummary();
    if (w) r.notes.push(`sidecar ${sc.name} logged: ${w.slice(0, 400)}`);
    if (!sc.alive) r.notes.push(`sidecar ${sc.name} exited (${sc.exitSignal ?? sc.exitCode}): it must follow the failover without a restart`);
  }

  // Something left behind (the tube's counts not back to 0, a TTR that ran out): what Redis holds.
  if (r.leftInQueue !== 0 || result.jobTimeouts !== 0) r.notes.push(await whatRedisHolds(replicaAdmin, prefix));
  // FAULTS_DRILL_DUMP=<path prefix>: every op, delivery and both sidecars' last log lines as JSON.
  if (process.env.FAULTS_DRILL_DUMP) {
    const { writeFileSync } = await import('node:fs');
    writeFileSync(`${process.env.FAULTS_DRILL_DUMP}-${o.run.slice(0, 1)}-${Date.now()}.json`, JSON.stringify({
      kill, promoted, notes: r.notes, dups: r.dups,
      ops: result.ledger.ops.map((x) => ({ ...x, sentAt: x.sentAt - kill, doneAt: x.doneAt - kill })),
      deliveries: [...result.ledger.deliveries.values()].flat().map((d) => ({ ...d, at: d.at - kill })),
      logA: A.log, logB: B.log,
    }));
  }
  // FAULTS_LOG_DIR: the Redis and Sentinel logs of a run that went unexpectedly, for a post-mortem.
  if (process.env.FAULTS_LOG_DIR && (switches.size !== 1 || r.leftInQueue !== 0 || result.jobTimeouts !== 0)) {
    const { copyFileSync, existsSync: exists } = await import('node:fs');
    const { join } = await import('node:path');
    const tag = `${o.run.slice(0, 1)}-${kill}`;
    for (const [name, dir] of [['primary', primary.dir], ['replica', replica.dir]] as const) {
      if (exists(join(dir, 'redis.log'))) copyFileSync(join(dir, 'redis.log'), join(process.env.FAULTS_LOG_DIR, `${tag}-${name}-redis.log`));
    }
    sentinels.forEach((sn, i) => { if (exists(sn.logFile)) copyFileSync(sn.logFile, join(process.env.FAULTS_LOG_DIR!, `${tag}-sentinel${i}.log`)); });
  }
  // Failed client commands, and when puts and reserves worked again.
  const ops = result.ledger.ops;
  // A client whose connection closed reconnects, and its use / watch may fail too (a tube it
  // starts referencing is created in Redis first): those count as failed commands as well.
  const failedOps = [...ops.filter((op) => !SUCCESS.has(op.result)), ...result.ledger.setupFailures];
  const failedBy: Record<string, number> = {};
  for (const op of failedOps) failedBy[`${op.op} ${op.result}`] = (failedBy[`${op.op} ${op.result}`] ?? 0) + 1;
  const times = failedOps.map((op) => op.doneAt);
  const firstBack = (op: string, word: string) => {
    const t = ops.filter((x) => x.op === op && x.result === word && x.sentAt >= dead).reduce((m, x) => Math.min(m, x.doneAt), Infinity);
    return t === Infinity ? null : t - kill;
  };
  const limit = promoted + SLACK_MS;
  const outside = failedOps.filter((op) => op.doneAt < kill || op.doneAt > limit);
  r.notes.push(`failed client commands: ${Object.entries(failedBy).map(([k, v]) => `${k}×${v}`).join(', ') || 'none'}`);
  if (outside.length) {
    r.notes.push(`failed outside kill..promotion+${SLACK_MS} ms (${promoted - kill + SLACK_MS} ms): ${outside.slice(0, 12).map((op) => `${op.op} ${op.result} by ${op.client} via ${op.via} sent ${op.sentAt - kill} failed ${op.doneAt - kill}`).join('; ')}${outside.length > 12 ? ` … ${outside.length - 12} more` : ''}`);
  }

  // The jobs that took longest from their put's reply to their first delivery.
  const slow = [...result.ledger.attempts.values()].filter((a) => result.ledger.deliveries.has(a.marker) && a.doneAt !== undefined)
    .map((a) => ({ a, first: Math.min(...result.ledger.deliveries.get(a.marker)!.map((d) => d.at)) }))
    .sort((x, y) => (y.first - y.a.doneAt!) - (x.first - x.a.doneAt!)).slice(0, 5);
  r.notes.push(`slowest to deliver (put sent/answered/first delivered, ms after the kill): ${slow.map(({ a, first }) => `${a.outcome.kind === 'acked' ? `#${a.outcome.id}` : a.outcome.kind} ${a.marker} via ${a.via} ${a.sentAt - kill}/${a.doneAt! - kill}/${first - kill}`).join('; ')}`);

  const tookEffect = Object.values(r.tookEffect).reduce((a, b) => a + b, 0);
  const checks: Array<[boolean, string]> = [
    [r.lost === 0, `${r.lost} acknowledged jobs never delivered: ${r.lostList.slice(0, 20).map((l) => `#${l.id} (${l.marker} via ${l.via}${l.state ? `, ${l.state}` : ''})`).join('; ')}`],
    [outside.length === 0, `${outside.length} client commands failed outside the failover window (kill .. promotion + ${SLACK_MS} ms = ${promoted - kill + SLACK_MS} ms after the kill): the last at ${times.length ? Math.max(...times) - kill : '-'} ms`],
    [r.dupAfterDeleted === 0, `${r.dupAfterDeleted} jobs delivered again after their delete answered DELETED (an acknowledged delete undone)`],
    [r.corrupt === 0 && r.idMismatch === 0, `${r.corrupt} bodies failed their CRC, ${r.idMismatch} jobs came back under another id than INSERTED named`],
    [tookEffect === 0, `${tookEffect} error replies took effect: ${r.tookEffectList.slice(0, 10).map((t) => `${t.word} → job #${t.id} via ${t.via}`).join('; ')}`],
    [r.dupTtrLapsed === 0 && result.jobTimeouts === 0, `reservations went back by their TTR: job-timeouts ${result.jobTimeouts}, redeliveries after the TTR ${r.dupTtrLapsed}`],
    [r.recoverMs !== null, 'puts and reserves never succeeded again on both sidecars'],
    [A.alive && B.alive, 'a sidecar exited: it must follow the failover without a restart'],
    // Run c measures a late link: it must have stayed late (Sentinel may not have pointed the old primary around its proxy).
    [!link2 || oldInfo.master_port === String(link2.port), `the old primary's link did not stay on its delaying proxy: it replicates from port ${oldInfo.master_port}`],
  ];
  const failedChecks = checks.filter(([ok]) => !ok).map(([, what]) => what);
  const figures: Figures = {
    run: o.run, report: r,
    promoted: promoted - kill, failovers: switches.size, sentinelsSwitched: switched - kill, rejoined: rejoined - kill,
    failed: failedOps.length, failedBy,
    firstFailed: times.length ? Math.min(...times) - kill : null,
    lastFailed: times.length ? Math.max(...times) - kill : null,
    putsBack: firstBack('put', 'INSERTED'), reservesBack: firstBack('reserve', 'RESERVED'),
    failedChecks: o.strict && switches.size === 1 ? failedChecks : [],
  };
  const label = !o.strict ? '(not asserted)' : switches.size !== 1 ? '(not asserted: a second failover)' : 'FAILED:';
  for (const f of failedChecks) r.notes.push(`${label} ${f}`);
  runs.push(figures);
  console.log([...table([figures]), ...details(r)].join('\n'));
  if (o.strict && failedChecks.length) {
    // What Sentinel did, for the failure's reader.
    console.log(sentinels.flatMap((s, i) => s.events().slice(-40).map((l) => `  sentinel ${i}: ${l}`)).join('\n'));
  }
  return figures;
}

/**
 * The drill, asserted (strict) or not. Now and then Sentinel fails over a second
 * time, back to the old primary: right after the switch one Sentinel goes
 * down-after-milliseconds (1 s) without the new primary's PONG (a busy machine)
 * and, the others' down-replies about the old primary apparently still counting,
 * the new one is at once objectively down. That is not the drill designed: its
 * row is printed, not asserted, and the drill runs once more. What a second
 * failover does to the sidecars is pinned in failover-pinned.test.ts.
 */
async function drillAndCheck(o: DrillOptions): Promise<void> {
  let figures = await drill(o);
  if (o.strict && figures.failovers !== 1) {
    console.log(`${o.run}: Sentinel failed over ${figures.failovers} times; running the drill again`);
    await cleanUp();
    figures = await drill({ ...o, run: `${o.run} (again)` });
  }
  if (o.strict) {
    expect(figures.failovers, 'Sentinel failed over more than once, twice in a row').toBe(1);
    expect(figures.failedChecks).toEqual([]);
  }
}

describe.sequential(`Sentinel failover under load (${FULL ? 'full' : 'CI'} size)`, () => {
  it('a. --min-replicas 1: nothing acknowledged is lost, and clients fail only during the failover', async () => {
    await drillAndCheck({ run: 'a. min-replicas 1', minReplicas: 1, delayMs: 0, strict: true });
  }, TEST_TIMEOUT);

  it('b. no --min-replicas: the figures (acknowledged writes may be lost)', async () => {
    await drillAndCheck({ run: 'b. no min-replicas', minReplicas: 0, delayMs: 0, strict: false });
  }, TEST_TIMEOUT);

  it('c. --min-replicas 1, replica link 10 ms late each way: nothing acknowledged is lost', async () => {
    await drillAndCheck({ run: 'c. min-replicas 1, link +10 ms', minReplicas: 1, delayMs: 10, strict: true });
  }, TEST_TIMEOUT);

  // The contrast to c: the same late link without --min-replicas. What the replica had not yet
  // received when the primary died (about 10 ms of acknowledged writes) is gone after the failover.
  it('d. no --min-replicas, replica link 10 ms late each way: the figures', async () => {
    await drillAndCheck({ run: 'd. no min-replicas, link +10 ms', minReplicas: 0, delayMs: 10, strict: false });
  }, TEST_TIMEOUT);
});
