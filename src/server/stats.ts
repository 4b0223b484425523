// The stats model: the values of stats, stats-tube, stats-job and stats-room
// as typed objects (src/protocol/generated.ts, from protocol/stats.json),
// gathered from the stores and from the counters of every live sidecar. The
// YAML replies and the public API's stats() render the same objects.
import os from 'node:os';
import type { StatsSource } from '../commands/session.js';
import type { JobStats, RoomStats, ServerStats, TubeStats } from '../protocol/generated.js';
import { COMMAND_COUNTERS } from '../protocol/stats.js';
import type { JobStore, NodeSnapshot } from '../store/job-store.js';
import type { RoomStore } from '../store/room-store.js';
import { sumSnapshots, WAITING_WATCH, type Counters } from './counters.js';
import type { Presence } from './presence.js';

/** The protocol version this sidecar speaks (stats `version`). */
export const PROTOCOL_VERSION = '1.13';

export interface StatsDeps {
  jobs: JobStore;
  rooms: RoomStore;
  counters: Counters;
  presence: Presence;
  startedAt: number;
  maxJobSize: number;
  draining(): boolean;
}

/** CPU time as beanstalkd prints rusage: seconds with six decimals. */
function cpuSeconds(us: number): string {
  return `${Math.floor(us / 1e6)}.${String(us % 1e6).padStart(6, '0')}`;
}

const seconds = (ms: number) => Math.floor(ms / 1000);
/** Whole seconds in a span of µs, truncated as beanstalkd truncates nanoseconds. */
const wholeSeconds = (us: number) => Math.floor(us / 1e6);

/** The per-command counters of ServerStats (COMMAND_COUNTERS, from the same field list). */
type CommandCounters = { [K in keyof ServerStats as K extends `cmd-${string}` ? K : never]: number };

export class StatsCollector implements StatsSource {
  constructor(private readonly d: StatsDeps) {}

  async server(): Promise<ServerStats> {
    const { jobs, counters } = this.d;
    const [t, others] = await Promise.all([jobs.totals(), this.d.presence.otherSnapshots()]);
    const all = (field: string, mine: number) => mine + sumSnapshots(others, field);
    const commands = Object.fromEntries(COMMAND_COUNTERS.map((name) => [name, all(name, counters.commands.get(name) ?? 0)]));
    const usage = process.resourceUsage();
    return {
      'current-jobs-urgent': t.urgent, 'current-jobs-ready': t.ready,
      'current-jobs-reserved': t.reserved, 'current-jobs-delayed': t.delayed,
      'current-jobs-buried': t.buried,
      ...(commands as CommandCounters),
      'job-timeouts': t.jobTimeouts, 'total-jobs': t.totalJobs,
      'max-job-size': this.d.maxJobSize, 'current-tubes': t.tubes,
      'current-connections': all('current-connections', counters.connections),
      'current-producers': all('current-producers', counters.producers),
      'current-workers': all('current-workers', counters.workers),
      'current-waiting': all('current-waiting', counters.waiting),
      'total-connections': all('total-connections', counters.totalConnections),
      pid: process.pid, version: PROTOCOL_VERSION,
      'rusage-utime': cpuSeconds(usage.userCPUTime), 'rusage-stime': cpuSeconds(usage.systemCPUTime),
      uptime: seconds(Date.now() - this.d.startedAt),
      'binlog-oldest-index': 0, 'binlog-current-index': 0, 'binlog-records-migrated': 0,
      'binlog-records-written': 0, 'binlog-max-size': 10485760,
      draining: this.d.draining(), id: this.d.presence.nodeId,
      hostname: os.hostname(), os: os.version(), platform: os.machine(),
    };
  }

  async tube(name: string): Promise<TubeStats | null> {
    const [counts, others] = await Promise.all([this.d.jobs.tubeCounts([name]), this.d.presence.otherSnapshots()]);
    const t = counts.tubes.get(name);
    if (!t) return null;
    const local = this.d.counters.tubes.get(name);
    const use = (field: 'using' | 'watching', others: NodeSnapshot[]) =>
      (local?.[field] ?? 0) + sumSnapshots(others, `${field}:${name}`);
    // Other sidecars' waiting connections that watch many tubes: whether each watches this one, the store says.
    const wide = others.flatMap((o) => Object.keys(o).filter((f) => f.startsWith(WAITING_WATCH)).map((f) => f.slice(WAITING_WATCH.length)));
    const waiting = this.d.counters.waitingOn(name) + sumSnapshots(others, `waiting:${name}`)
      + (wide.length > 0 ? await this.d.jobs.watchListsWith(name, wide) : 0);
    return {
      name, 'current-jobs-urgent': t.urgent, 'current-jobs-ready': t.ready,
      'current-jobs-reserved': t.reserved, 'current-jobs-delayed': t.delayed, 'current-jobs-buried': t.buried,
      'total-jobs': t.totalJobs,
      'current-using': use('using', others), 'current-watching': use('watching', others), 'current-waiting': waiting,
      'cmd-delete': t.cmdDelete, 'cmd-pause-tube': t.cmdPauseTube,
      pause: t.pause, 'pause-time-left': wholeSeconds(t.pauseLeftUs),
      'max-reserved': t.maxReserved, 'reserve-rate': t.reserveRate, 'dedup-window': t.dedupWindow,
      'jobs-expired': t.jobsExpired, 'duplicate-puts': t.duplicatePuts,
    };
  }

  async job(id: string): Promise<JobStats | null> {
    const j = await this.d.jobs.jobInfo(id);
    if (!j) return null;
    return {
      id: j.id, tube: j.tube, state: j.state, pri: j.pri, age: seconds(j.ageMs), delay: j.delay, ttr: j.ttr,
      'time-left': wholeSeconds(j.timeLeftUs), file: 0, reserves: j.reserves, timeouts: j.timeouts,
      releases: j.releases, buries: j.buries, kicks: j.kicks,
    };
  }

  async room(name: string): Promise<RoomStats | null> {
    const r = await this.d.rooms.state(name);
    if (!r) return null;
    return {
      name, capacity: r.capacity, 'checkin-timeout': r.checkinTimeout, 'participant-timeout': r.participantTimeout,
      grace: r.grace, 'rate-limit': r.rateLimit, paused: r.paused, 'lottery-time-left': Math.ceil(r.lotteryMsLeft / 1000),
      configured: r.configured, participants: r.participants, tickets: r.tickets, waiting: r.waiting,
      'open-places': r.openPlaces, 'admitted-total': r.admittedTotal, 'dropouts-total': r.dropoutsTotal,
      'left-total': r.leftTotal, 'participant-timeouts-total': r.participantTimeoutsTotal,
      'tickets-used-total': r.ticketsUsedTotal, 'tickets-expired-total': r.ticketsExpiredTotal,
      'admission-rate': r.admissionRate, 'last-in-line-eta': r.lastInLineEtaSeconds,
    };
  }
}
