// Prometheus metrics of one sidecar (prom-client), names prefixed redstalk_:
// commands by name and result and their latency, batch calls to Redis (size,
// latency), connections, jobs by state and tube, waiting rooms, and the
// process. Job and room figures are read from Redis at scrape time, for at
// most --metrics-tubes tubes and rooms each (totals always count all).
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Counters } from '../server/counters.js';
import { replyWord, type Instruments } from '../server/instruments.js';
import { LATENCY_BUCKETS_MS, LATENCY_TUBES, type LatencyKind } from '../server/latencies.js';
import type { JobStore, TubeCounts } from '../store/job-store.js';
import type { RoomStore } from '../store/room-store.js';

export interface MetricsSource {
  readonly jobs: JobStore;
  readonly rooms: RoomStore;
  /** This sidecar's own connection counters. */
  readonly counters: Counters;
  /** At most this many tubes, and rooms, get series of their own. */
  readonly seriesLimit: number;
  draining(): boolean;
}

const STATES = ['urgent', 'ready', 'reserved', 'delayed', 'buried'] as const satisfies ReadonlyArray<keyof TubeCounts>;

/** The gauges read from the store (emptied when it does not answer). */
const STORE_GAUGES = ['jobs', 'tubes', 'tubeJobs', 'tubeTotal', 'tubeExpired', 'tubeDuplicates', 'tubeLimit', 'oldestReady', 'rooms', 'participants', 'roomWaiting', 'admitted', 'dropouts'] as const;

export class Metrics implements Instruments {
  readonly registry = new Registry();
  private source: MetricsSource | null = null;
  private readonly commands: Counter<'command' | 'result'>;
  private readonly latency: Histogram<'command'>;
  private readonly batchOps: Histogram;
  private readonly batchSeconds: Histogram<'outcome'>;
  private readonly jobSeconds: Record<LatencyKind, Histogram<'tube'>>;
  /** Tubes with series of their own in jobSeconds (the rest count under tube="*"). */
  private readonly timedTubes = new Set<string>();
  private readonly gauges: Record<string, Gauge<string>>;

  constructor() {
    const registers = [this.registry];
    this.commands = new Counter({ name: 'redstalk_commands_total', help: 'Commands answered, by command and reply word', labelNames: ['command', 'result'], registers });
    this.latency = new Histogram({
      name: 'redstalk_command_duration_seconds', help: 'Time from reading a command to writing its reply (blocking reserves included)',
      labelNames: ['command'], buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 30], registers,
    });
    this.batchOps = new Histogram({ name: 'redstalk_batch_ops', help: 'Job commands per batch call to Redis', buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024], registers });
    this.batchSeconds = new Histogram({
      name: 'redstalk_batch_call_duration_seconds', help: 'Time of a batch call to Redis, by outcome', labelNames: ['outcome'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2], registers,
    });
    const jobSeconds = (kind: LatencyKind, help: string) => new Histogram({
      name: `redstalk_job_${kind}_seconds`, help, labelNames: ['tube'], buckets: LATENCY_BUCKETS_MS.map((ms) => ms / 1000), registers,
    });
    this.jobSeconds = {
      wait: jobSeconds('wait', `Time a job handed out by this sidecar was ready before its reserve, by tube (the first ${LATENCY_TUBES}; the rest as "*")`),
      run: jobSeconds('run', `Time from this sidecar's RESERVED to its DELETED of a job, by tube (the first ${LATENCY_TUBES}; the rest as "*")`),
    };
    const gauge = (name: string, help: string, labelNames: string[] = []) => new Gauge({ name, help, labelNames, registers });
    this.gauges = {
      connections: gauge('redstalk_connections', 'Open client connections of this sidecar'),
      producers: gauge('redstalk_producers', 'Connections of this sidecar that have put a job'),
      workers: gauge('redstalk_workers', 'Connections of this sidecar that have reserved a job'),
      waiting: gauge('redstalk_waiting', 'Connections of this sidecar blocked in a reserve'),
      connectionsTotal: gauge('redstalk_connections_accepted', 'Connections this sidecar accepted since it started'),
      draining: gauge('redstalk_draining', '1 in drain mode (new puts answer DRAINING)'),
      storeUp: gauge('redstalk_store_up', '1 when Redis answered this scrape\'s reads, else 0 (and no job or room series)'),
      jobs: gauge('redstalk_jobs', 'Jobs in the store by state, all tubes', ['state']),
      tubes: gauge('redstalk_tubes', 'Tubes in the store'),
      tubeJobs: gauge('redstalk_tube_jobs', 'Jobs by tube and state (the first --metrics-tubes tubes)', ['tube', 'state']),
      tubeTotal: gauge('redstalk_tube_jobs_created', 'Jobs ever put into the tube', ['tube']),
      tubeExpired: gauge('redstalk_tube_jobs_expired', 'put-with jobs of the tube that no reserve took by their expiry (deleted or buried)', ['tube']),
      tubeDuplicates: gauge('redstalk_tube_duplicate_puts', 'put-with commands answered DUPLICATE: the tube held a job of that key', ['tube']),
      tubeLimit: gauge('redstalk_tube_limit', 'A tube\'s limit set with tube-set (0: none): max-reserved, or reserve-rate a second', ['tube', 'limit']),
      oldestReady: gauge('redstalk_tube_oldest_ready_age_seconds', 'Seconds since the tube\'s oldest ready job was put (tubes with ready jobs, of the first --metrics-tubes)', ['tube']),
      rooms: gauge('redstalk_rooms', 'Waiting rooms in the store'),
      participants: gauge('redstalk_room_participants', 'People inside the room', ['room']),
      roomWaiting: gauge('redstalk_room_waiting', 'People in the room\'s line', ['room']),
      admitted: gauge('redstalk_room_admitted', 'Admissions to the room since it was created', ['room']),
      dropouts: gauge('redstalk_room_dropouts', 'People dropped from the room\'s line for not checking in', ['room']),
    };
    collectDefaultMetrics({ register: this.registry, prefix: 'redstalk_' });
  }

  /** The sidecar to read from at scrape time. */
  observe(source: MetricsSource): void { this.source = source; }

  answered(command: string, reply: string, elapsedMs: number): void {
    this.commands.inc({ command, result: replyWord(reply) });
    this.latency.observe({ command }, elapsedMs / 1000);
  }

  batchApplied(ops: number, elapsedMs: number, failed: boolean): void {
    this.batchOps.observe(ops);
    this.batchSeconds.observe({ outcome: failed ? 'error' : 'ok' }, elapsedMs / 1000);
  }

  jobTimed(kind: LatencyKind, tube: string, ms: number): void {
    if (!this.timedTubes.has(tube) && this.timedTubes.size < LATENCY_TUBES) this.timedTubes.add(tube);
    this.jobSeconds[kind].observe({ tube: this.timedTubes.has(tube) ? tube : '*' }, ms / 1000);
  }

  get contentType(): string { return this.registry.contentType; }

  /** Batch calls made so far and their mean size in job commands (from the batch histogram). */
  async batchSummary(): Promise<{ calls: number; meanOps: number }> {
    const values = (await this.batchOps.get()).values;
    const calls = values.find((v) => v.metricName === 'redstalk_batch_ops_count')?.value ?? 0;
    const ops = values.find((v) => v.metricName === 'redstalk_batch_ops_sum')?.value ?? 0;
    return { calls, meanOps: calls > 0 ? ops / calls : 0 };
  }

  /** The exposition text, after reading the store. */
  async render(): Promise<string> {
    const s = this.source;
    if (s) {
      this.refreshOwn(s);
      try {
        await this.readStore(s);
        this.gauges.storeUp!.set(1);
      } catch {
        // Redis out of reach: say so (an alert's figure), and show no stale job or room series.
        this.gauges.storeUp!.set(0);
        for (const k of STORE_GAUGES) this.gauges[k]!.reset();
      }
    }
    return this.registry.metrics();
  }

  /** This sidecar's own figures: no store call. */
  private refreshOwn(s: MetricsSource): void {
    const g = this.gauges;
    const c = s.counters;
    g.connections!.set(c.connections);
    g.producers!.set(c.producers);
    g.workers!.set(c.workers);
    g.waiting!.set(c.waiting);
    g.connectionsTotal!.set(c.totalConnections);
    g.draining!.set(s.draining() ? 1 : 0);
  }

  /** The figures of the whole data set, read from the store. */
  private async readStore(s: MetricsSource): Promise<void> {
    const g = this.gauges;
    const [names, roomNames, totals] = await Promise.all([s.jobs.listTubes(), s.rooms.list(), s.jobs.totals()]);
    const shown = names.slice(0, s.seriesLimit);
    const [counts, oldest] = await Promise.all([s.jobs.tubeCounts(shown), s.jobs.oldestReady(shown)]);
    g.tubes!.set(totals.tubes);
    g.tubeJobs!.reset();
    g.tubeTotal!.reset();
    g.tubeExpired!.reset();
    g.tubeDuplicates!.reset();
    g.tubeLimit!.reset();
    g.oldestReady!.reset();
    for (const [tube, ms] of oldest) g.oldestReady!.set({ tube }, ms / 1000);
    for (const state of STATES) g.jobs!.set({ state }, totals[state]);
    for (const name of shown) {
      const t = counts.tubes.get(name);
      if (!t) continue;
      for (const state of STATES) g.tubeJobs!.set({ tube: name, state }, t[state]);
      g.tubeTotal!.set({ tube: name }, t.totalJobs);
      g.tubeExpired!.set({ tube: name }, t.jobsExpired);
      g.tubeDuplicates!.set({ tube: name }, t.duplicatePuts);
      g.tubeLimit!.set({ tube: name, limit: 'max-reserved' }, t.maxReserved);
      g.tubeLimit!.set({ tube: name, limit: 'reserve-rate' }, t.reserveRate);
    }
    g.rooms!.set(roomNames.length);
    for (const k of ['participants', 'roomWaiting', 'admitted', 'dropouts']) g[k]!.reset();
    const rooms = await Promise.all(roomNames.slice(0, s.seriesLimit).map(async (room) => [room, await s.rooms.state(room)] as const));
    for (const [room, r] of rooms) {
      if (!r) continue;
      g.participants!.set({ room }, r.participants);
      g.roomWaiting!.set({ room }, r.waiting);
      g.admitted!.set({ room }, r.admittedTotal);
      g.dropouts!.set({ room }, r.dropoutsTotal);
    }
  }
}
