// What the failover drill (failover.test.ts) found, pinned without load. A
// switchover (SENTINEL FAILOVER: the old primary stays up) leaves the old
// primary a primary until Sentinel converts it into a replica, about 10 s
// later (+convert-to-slave: it must report role:master for 8 s first). The
// drill met the same state when Sentinel failed over a second time. A sidecar
// must leave the demoted primary at the switch (+switch-master), not when it
// is converted: what it writes there meanwhile is gone after the conversion.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { Wire, yamlMap } from '../helpers/wire.js';
import { CuttableProxy, FaultRedis, SpawnedSidecar } from './processes.js';
import { admin, pinnedLinkArgs, replicationInfo, SentinelProc, sentinelMaster, sentinelPrimaryPort, until } from './sentinels.js';

const cleanup: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) {
    try { await f(); } catch (e) { console.error('cleanup failed:', e); }
  }
}, 60_000);

/**
 * A primary, its replica, three Sentinels and one sidecar on them. With cuttable,
 * the replica's link to the primary goes through a proxy that can cut it (and the
 * Sentinels may not point the replica around it: sentinels.ts, PINNED_LINKS).
 */
async function replicated(sidecarArgs: string[], cuttable = false) {
  const base = ['--repl-diskless-sync-delay', '0', ...(cuttable ? pinnedLinkArgs() : [])];
  const primary = await FaultRedis.start(base);
  cleanup.push(() => primary.stop());
  const link = cuttable ? await CuttableProxy.start(primary.port) : null;
  if (link) cleanup.push(() => link.close());
  const replica = await FaultRedis.start([...base, '--replicaof', '127.0.0.1', String(link?.port ?? primary.port)]);
  cleanup.push(() => replica.stop());
  const conns: Redis[] = [];
  cleanup.push(() => { for (const c of conns) c.disconnect(); });
  const connect = (port: number) => { const r = admin(port); r.on('error', () => {}); conns.push(r); return r; };
  const [primaryAdmin, replicaAdmin] = [connect(primary.port), connect(replica.port)];
  await until('the replica in sync', async () => (await replicationInfo(replicaAdmin)).master_link_status === 'up', 20_000);
  const sentinels: SentinelProc[] = [];
  for (let i = 0; i < 3; i++) {
    const s = await SentinelProc.start(primary.port, { downAfterMs: 1000, failoverTimeoutMs: 3000 }, cuttable);
    cleanup.push(() => s.stop());
    sentinels.push(s);
  }
  const sentinelAdmins = sentinels.map((s) => connect(s.port));
  await until('the Sentinels know the replica and each other', async () => (await Promise.all(sentinelAdmins.map(sentinelMaster)))
    .every((m) => m['num-slaves'] === '1' && m['num-other-sentinels'] === '2'), 30_000, 100);
  const url = `redis-sentinel://${sentinels.map((s) => `127.0.0.1:${s.port}`).join(',')}?master=mymaster`;
  const sidecar = await SpawnedSidecar.start('A', url, `pin${randomBytes(3).toString('hex')}`, sidecarArgs);
  cleanup.push(() => sidecar.stop());
  /** SENTINEL FAILOVER; resolves once every Sentinel names the replica as the primary. */
  const switchover = async () => {
    expect(await sentinelAdmins[0]!.call('SENTINEL', 'FAILOVER', 'mymaster')).toBe('OK');
    return until('every Sentinel names the replica', async () => (await Promise.all(sentinelAdmins.map(sentinelPrimaryPort))).every((p) => p === replica.port), 30_000, 20);
  };
  /** Resolves once Sentinel has made the old primary a replica of the new one, in sync. */
  const oldPrimaryConverted = () => until('the old primary a replica in sync', async () => {
    const i = await replicationInfo(primaryAdmin);
    return i.role === 'slave' && i.master_link_status === 'up';
  }, 60_000, 100);
  /** Resolves once the replica reports role:master and every Sentinel names it. */
  const promoted = async () => {
    await until('the replica promoted', async () => (await replicationInfo(replicaAdmin)).role === 'master', 60_000, 50);
    return until('every Sentinel names the replica', async () => (await Promise.all(sentinelAdmins.map(sentinelPrimaryPort))).every((p) => p === replica.port), 30_000, 50);
  };
  return { sidecar, primary, link, switchover, oldPrimaryConverted, promoted };
}

/** One command on a connection of its own; '' when it fails (a sidecar waiting for its store closes busy connections). */
const once = async (port: number, command: string): Promise<string> => {
  const w = await Wire.connect(port).catch(() => null);
  if (!w) return '';
  try { return await w.cmd(command, 5000); } catch { return ''; } finally { w.close(); }
};

const put = async (port: number, body: string): Promise<string> => once(port, `put 0 0 60 ${body.length}\r\n${body}`);

/** The job's state by stats-job, '' while no reply says. */
const jobState = async (port: number, id: number): Promise<string> => {
  const reply = await once(port, `stats-job ${id}`);
  return reply.startsWith('OK') ? yamlMap(reply).state! : '';
};

it('after a switchover, a connection closed on the demoted primary has its reservation handed back on the new one (not after the TTR)', async () => {
  const { sidecar, switchover, oldPrimaryConverted } = await replicated(['--min-replicas', '1']);
  const x = await Wire.connect(sidecar.port);
  cleanup.push(() => x.close());
  expect(await x.cmd('put 0 0 120 1\r\nj')).toBe('INSERTED 1');
  expect(await x.cmd('reserve-with-timeout 5')).toBe('RESERVED 1 1\nj'); // WAIT: the replica has the reservation
  await switchover();
  x.close(); // the sidecar still talks to the old primary: the hand-back runs there (no WAIT), and is lost at its conversion
  await oldPrimaryConverted();
  let state = '';
  await until('stats-job 1 answered', async () => (state = await jobState(sidecar.port, 1)) !== '', 30_000, 200);
  // The TTR is 120 s: reserved here means it goes back only then.
  expect(state).toBe('ready');
}, 120_000);

it('without --min-replicas, a put acknowledged after a switchover is not lost when the demoted primary is converted', async () => {
  const { sidecar, switchover, oldPrimaryConverted } = await replicated([]);
  expect(await put(sidecar.port, 'a')).toBe('INSERTED 1');
  await switchover();
  const acked: string[] = [];
  for (let i = 0; i < 5; i++) {
    const reply = await put(sidecar.port, `after${i}`);
    if (reply.startsWith('INSERTED')) acked.push(reply.split(' ')[1]!);
    await new Promise((r) => setTimeout(r, 200));
  }
  await oldPrimaryConverted();
  const gone: string[] = [];
  for (const id of acked) {
    let reply = '';
    await until(`peek ${id}`, async () => (reply = await once(sidecar.port, `peek ${id}`)) !== '', 30_000, 200);
    if (reply === 'NOT_FOUND') gone.push(id);
  }
  expect({ acked, gone }).toEqual({ acked, gone: [] });
}, 120_000);

it('with --min-replicas 1, a reservation handed back on a primary that dies before its replica has the hand-back goes back on the promoted replica (not after the TTR)', async () => {
  const { sidecar, primary, link, promoted } = await replicated(['--min-replicas', '1'], true);
  const x = await Wire.connect(sidecar.port);
  cleanup.push(() => x.close());
  expect(await x.cmd('put 0 0 120 1\r\nj')).toBe('INSERTED 1');
  expect(await x.cmd('reserve-with-timeout 5')).toBe('RESERVED 1 1\nj'); // WAIT: the replica has the reservation
  link!.cut(); // the replica hears nothing more from the primary
  x.close(); // the hand-back runs on the primary (which answers), is not confirmed by a replica, and dies with it
  await new Promise((r) => setTimeout(r, 500));
  await primary.kill9();
  await promoted();
  // The TTR is 120 s: still reserved 10 s after the promotion means it goes back only then.
  let state = '';
  await until('job 1 ready', async () => (state = await jobState(sidecar.port, 1)) === 'ready', 10_000, 200).catch(() => {});
  expect(state).toBe('ready');
}, 120_000);
