// The admin API's queries and actions, over the job and room stores: what
// the HTTP routes (src/http/admin-routes.ts) serve, and so what `redstalk
// jobs` and the dashboard see. Jobs are read by lua/jobs/listJobs.lua, never
// decoded here; every change goes through the store's own calls.
import type { JobState, JobStore, JobTotals } from '../store/job-store.js';
import { COMMAND_COUNTERS } from '../protocol/stats.js';
import { jobOps } from '../store/ops.js';
import type { RoomStore } from '../store/room-store.js';
import { Confirmations } from './confirm.js';
import { TubeRates } from './rates.js';
import { AdminError } from './errors.js';
import { addCounts, LATENCY_KINDS, latencyField, summedCounts } from '../server/latencies.js';
import { bodyView, jobView, listedView, percentiles, tubeView, type TubeLatency, type TubeView } from './views.js';

export const JOB_STATES: readonly JobState[] = ['ready', 'delayed', 'reserved', 'buried'];
export const TUBE_SORTS = ['name', 'ready', 'urgent', 'reserved', 'delayed', 'buried', 'total', 'oldestReadyAge'] as const;
export type TubeSort = (typeof TUBE_SORTS)[number];

/** Tubes counted per store call when every tube's counts are needed (a sort by a count). */
const COUNT_CHUNK = 1000;
/** A sidecar's own counters of its snapshot (not its fields per tube, of which there may be thousands). */
const SIDECAR_FIELDS = ['current-connections', 'current-producers', 'current-workers', 'current-waiting', 'total-connections', ...COMMAND_COUNTERS];
/** How far back the history goes (history.ts). */
const HISTORY_MS = 3_600_000;
/** Bytes of each job's body a listing carries. */
const PREVIEW_BYTES = 200;
/** A bulk action looks at this many jobs at most (its count says when it stopped short). */
export const BULK_MAX_SCAN = 100_000;
/** Jobs a bulk action changes at once. */
const BULK_PARALLEL = 100;
/** Who a delete from the admin API is made as: it holds no reservation, so a reserved job is never deleted. */
const ADMIN_OWNER = 'admin:http';

export interface TubeListing { total: number; tubes: TubeView[] }

export interface JobListing { state: JobState; jobs: ReturnType<typeof listedView>[]; next: string; scanned: number }

export interface BulkFilter { action: 'kick' | 'delete'; tube: string; state: JobState; q: string }

export type BulkReply =
  | { confirmed: false; count: number; complete: boolean; confirm: string }
  | { confirmed: true; done: number };

const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);

export class AdminApi {
  private readonly confirmations: Confirmations;
  private readonly rates = new TubeRates();

  constructor(private readonly jobs: JobStore, private readonly rooms: RoomStore, confirmKey: Buffer) {
    this.confirmations = new Confirmations(confirmKey);
  }

  /** The jobs of all tubes by state, and the live sidecars with their own counters (not their per-tube fields). */
  async overview(): Promise<{ totals: JobTotals; sidecars: Array<{ id: string; counters: Record<string, string>; info: Record<string, string> }> }> {
    const [totals, nodes] = await Promise.all([this.jobs.totals(), this.jobs.nodes()]);
    const [snapshots, infos] = await Promise.all([this.jobs.nodeSnapshots(nodes.live, SIDECAR_FIELDS), this.jobs.nodeInfo(nodes.live)]);
    return { totals, sidecars: nodes.live.map((id, i) => ({ id, counters: snapshots[i] ?? {}, info: infos[i] ?? {} })) };
  }

  /** Says what this sidecar is (version, batch sizes) for every sidecar's dashboard, for ttlMs. */
  async publishInfo(node: string, info: Readonly<Record<string, string | number>>, ttlMs: number): Promise<void> {
    await this.jobs.publishNodeInfo(node, info, ttlMs);
  }

  /** The counts of these tubes (those that exist), by name. */
  async counts(names: readonly string[]): Promise<Map<string, TubeView>> {
    return new Map((await this.counted(names)).map((t) => [t.name, t]));
  }

  /** Tubes whose name holds `filter`, sorted, a page of them with their counts. */
  async tubes(filter: string, sort: TubeSort, descending: boolean, offset: number, limit: number): Promise<TubeListing> {
    const names = (await this.jobs.listTubes()).filter((n) => n.includes(filter));
    const dir = descending ? -1 : 1;
    if (sort === 'name') {
      names.sort((a, b) => dir * (a < b ? -1 : a > b ? 1 : 0));
      return { total: names.length, tubes: await this.counted(names.slice(offset, offset + limit)) };
    }
    const all = await this.counted(names);
    all.sort((a, b) => dir * ((a[sort] ?? -1) - (b[sort] ?? -1)) || (a.name < b.name ? -1 : 1));
    return { total: all.length, tubes: all.slice(offset, offset + limit) };
  }

  private async counted(names: readonly string[]): Promise<TubeView[]> {
    const out: TubeView[] = [];
    for (let i = 0; i < names.length; i += COUNT_CHUNK) {
      const chunk = names.slice(i, i + COUNT_CHUNK);
      const [{ tubes }, oldest] = await Promise.all([this.jobs.tubeCounts(chunk), this.jobs.oldestReady(chunk)]);
      for (const [name, c] of tubes) out.push(tubeView(name, c, oldest.get(name), this.rates.read(name, c.totalJobs, c.cmdDelete)));
    }
    return out;
  }

  /** Reads every tube's counts (the history sampler, every slot): its rates then cover at most that long. */
  async readAllTubes(): Promise<void> {
    await this.counted(await this.jobs.listTubes());
  }

  /** The `n` tubes whose oldest ready jobs are oldest, with those ages in seconds (of the first COUNT_CHUNK tubes listed). */
  async oldestTubes(n: number): Promise<Record<string, number>> {
    const names = (await this.jobs.listTubes()).slice(0, COUNT_CHUNK);
    const ages = [...(await this.jobs.oldestReady(names))].sort((a, b) => b[1] - a[1]).slice(0, n);
    return Object.fromEntries(ages.map(([tube, ms]) => [tube, ms / 1000]));
  }

  /** Offers a history sample for the current slot (history.ts). */
  async recordHistory(sample: object, slotMs: number): Promise<boolean> {
    return this.jobs.recordHistory(JSON.stringify(sample), slotMs, Math.ceil(HISTORY_MS / slotMs));
  }

  /** The last hour's samples, oldest first. */
  async history(): Promise<unknown[]> {
    return (await this.jobs.history()).map((s) => JSON.parse(s) as unknown);
  }

  async tube(name: string): Promise<TubeView & { latency: TubeLatency }> {
    const [t, latency] = await Promise.all([this.counted([name]).then((c) => c[0]), this.latencies([name])]);
    if (!t) throw new AdminError(404, `no tube ${name}`);
    return { ...t, latency: latency.get(name)! };
  }

  /** These tubes' wait and run times, from the counts every live sidecar publishes (src/server/latencies.ts). */
  async latencies(tubes: readonly string[], live?: readonly string[]): Promise<Map<string, TubeLatency>> {
    if (tubes.length === 0) return new Map();
    live ??= (await this.jobs.nodes()).live;
    const snapshots = await this.jobs.nodeSnapshots(live, tubes.flatMap((t) => LATENCY_KINDS.map((k) => latencyField(k, t))));
    return new Map(tubes.map((t) => [t, { wait: percentiles(summedCounts(snapshots, 'wait', t)), run: percentiles(summedCounts(snapshots, 'run', t)) }]));
  }

  /** Every tube's wait and run counts, summed over the live sidecars: field (latencyField) -> counts. */
  async latencyCounts(live?: readonly string[]): Promise<Map<string, number[]>> {
    live ??= (await this.jobs.nodes()).live;
    const out = new Map<string, number[]>();
    for (const snapshot of await this.jobs.nodeSnapshots(live)) {
      for (const [field, value] of Object.entries(snapshot)) {
        if (LATENCY_KINDS.some((k) => field.startsWith(`${k}:`))) out.set(field, addCounts(out.get(field), value));
      }
    }
    return out;
  }

  /** A page of the tube's jobs in a state; with `q`, only those whose id is q or whose body holds it. */
  async list(tube: string, state: JobState, cursor: string, limit: number, scan: number, q: string): Promise<JobListing> {
    const page = await this.jobs.listJobs(tube, { state, cursor, limit, scan, needle: Buffer.from(q), preview: PREVIEW_BYTES });
    return { state, jobs: page.jobs.map(listedView), next: page.next, scanned: page.scanned };
  }

  async job(id: string): Promise<Record<string, unknown>> {
    const [info, peeked] = await Promise.all([this.jobs.jobInfo(id), this.jobs.peekJob(id)]);
    if (!info || !peeked) throw new AdminError(404, `no job ${id}`);
    return { ...jobView(info), body: bodyView(peeked.body) };
  }

  async kick(tube: string, n: number): Promise<{ kicked: number }> {
    return { kicked: await this.jobs.kick(tube, n) };
  }

  async kickJob(id: string): Promise<{ kicked: true }> {
    const info = await this.existing(id);
    if (!(await this.jobs.kickJob(id, info.tube))) throw new AdminError(409, `job ${id} is ${info.state}: only a buried or delayed job can be kicked`);
    return { kicked: true };
  }

  async deleteJob(id: string): Promise<{ deleted: true }> {
    const info = await this.existing(id);
    if (info.state === 'reserved' || !(await this.deleteAs(id, info.tube))) throw new AdminError(409, `job ${id} is reserved: only its worker may delete it`);
    return { deleted: true };
  }

  private async existing(id: string) {
    const info = await this.jobs.jobInfo(id);
    if (!info) throw new AdminError(404, `no job ${id}`);
    return info;
  }

  /** A delete through the store's batch, as a connection's: false when the job is reserved (or gone). */
  private deleteAs(id: string, tube: string): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.jobs.submit(jobOps.delete(null, (_op, ok, err) => (err ? reject(err) : resolve(ok)), ADMIN_OWNER, id, tube));
    });
  }

  async pause(tube: string, seconds: number): Promise<{ paused: boolean; seconds: number }> {
    if (!(await this.jobs.pauseTube(tube, seconds))) throw new AdminError(404, `no tube ${tube}`);
    return { paused: seconds > 0, seconds };
  }

  /**
   * Without `confirm`: how many jobs the filter selects now, and a token to
   * act on them. With it: acts on at most that many of the jobs it selects now.
   */
  async bulk(f: BulkFilter, confirm: string | null): Promise<BulkReply> {
    if (f.action === 'kick' && f.state !== 'buried' && f.state !== 'delayed') throw new AdminError(400, 'only buried or delayed jobs can be kicked');
    if (f.action === 'delete' && f.state === 'reserved') throw new AdminError(400, 'reserved jobs cannot be deleted: only their workers may');
    const what = [f.action, f.tube, f.state, f.q];
    if (confirm === null) {
      const { ids, complete } = await this.select(f, Infinity);
      return { confirmed: false, count: ids.length, complete, confirm: this.confirmations.issue(what, ids.length) };
    }
    const count = this.confirmations.check(confirm, what);
    if (count === null) throw new AdminError(409, 'the confirmation is not for this filter, or it is over a minute old: ask for a new one');
    const { ids } = await this.select(f, count);
    let done = 0;
    for (let i = 0; i < ids.length; i += BULK_PARALLEL) {
      const chunk = ids.slice(i, i + BULK_PARALLEL);
      const applied = await Promise.all(chunk.map((id) => (f.action === 'kick' ? this.jobs.kickJob(id, f.tube) : this.deleteAs(id, f.tube))));
      done += sum(applied.map(Number));
    }
    return { confirmed: true, done };
  }

  /** The ids the filter selects, up to `most`; complete: every job of the state was looked at. */
  private async select(f: BulkFilter, most: number): Promise<{ ids: string[]; complete: boolean }> {
    const ids: string[] = [];
    let cursor = '';
    let scanned = 0;
    do {
      const page = await this.jobs.listJobs(f.tube, {
        state: f.state, cursor, limit: Math.min(5000, most - ids.length), scan: 5000, needle: Buffer.from(f.q), preview: 0,
      });
      for (const j of page.jobs) ids.push(j.id);
      cursor = page.next;
      scanned += page.scanned;
    } while (cursor !== '' && ids.length < most && scanned < BULK_MAX_SCAN);
    return { ids, complete: cursor === '' };
  }

  async roomList(): Promise<Array<Record<string, unknown>>> {
    const names = await this.rooms.list();
    const states = await Promise.all(names.map((n) => this.rooms.state(n)));
    return names.flatMap((name, i) => (states[i] ? [{ name, ...states[i] }] : []));
  }

  async pauseRoom(room: string, paused: boolean): Promise<{ room: string; paused: boolean }> {
    if (!(await this.rooms.state(room))) throw new AdminError(404, `no room ${room}`);
    await this.rooms.pause(room, paused);
    return { room, paused };
  }
}
