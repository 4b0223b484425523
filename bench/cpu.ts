// CPU per job: the user + system time of the processes under test, read from
// /proc/<pid>/stat (utime + stime, in clock ticks) at the start and the end
// of a measured window, divided by the jobs done in that window. For each
// redis-server also the time its commands took by its own account (the usec
// of every line of INFO commandstats, added up): commands that a script calls
// are counted in their own line and again in the script's (Redis 7), so that
// figure overstates the work; it is for comparing primaries and set-ups. And
// how many scripts it ran (EVALSHA, EVAL, FCALL: a sidecar's batch calls), and
// how many reads from its clients it processed (INFO stats
// total_reads_processed: its wake-ups for input, whatever the commands).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';

/**
 * client: this benchmark process (the load generator; for the bullmq target,
 * BullMQ's Queues and Workers); server: a redstalk sidecar (its primary and
 * workers added up) or beanstalkd; redis: one redis-server.
 */
export type CpuRole = 'client' | 'server' | 'redis';

export interface Watched {
  role: CpuRole;
  /** Names the same process across rounds: "sidecar 1", "redis 2", ... */
  label: string;
  /** Added up: a sidecar with --workers is its primary and every worker. */
  pids: number[];
  /** A redis-server's port, to read INFO commandstats from. */
  redisPort?: number;
}

export interface CpuUse {
  role: CpuRole;
  label: string;
  cpuSeconds: number;
  usPerJob: number;
  /** redis-server: INFO commandstats, usec of all commands added up. */
  commandSeconds?: number;
  commandUsPerJob?: number;
  /** redis-server: scripts run (EVALSHA, EVAL, FCALL). */
  scriptCalls?: number;
  scriptCallsPerJob?: number;
  /** redis-server: reads from its clients' sockets (total_reads_processed). */
  reads?: number;
  readsPerJob?: number;
}

/** What a redis-server says it did. */
interface CommandStats { seconds: number; scriptCalls: number; reads: number }

export interface CpuSample { cpuSeconds: number[]; commands: Array<CommandStats | undefined> }

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** utime + stime of a process (all its threads), in seconds; NaN once it has gone. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // After "pid (comm) ", the fields from the 3rd (state) on: utime is the 14th, stime the 15th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}

/** Every `cmdstat_NAME:calls=N,usec=N,...` line of INFO commandstats added up; the scripts' calls; total_reads_processed of INFO stats. */
function commandStats(info: string): CommandStats {
  let usec = 0;
  let scriptCalls = 0;
  for (const [, name, calls, us] of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+),/gm)) {
    usec += Number(us);
    if (/^(eval|evalsha|fcall)(_ro)?$/.test(name!)) scriptCalls += Number(calls);
  }
  return { seconds: usec / 1e6, scriptCalls, reads: Number(/^total_reads_processed:(\d+)/m.exec(info)?.[1] ?? NaN) };
}

const NO_ANSWER: CommandStats = { seconds: NaN, scriptCalls: NaN, reads: NaN };

const total = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

export class CpuMeter {
  private constructor(readonly watched: Watched[], private readonly links: Array<Redis | undefined>) {}

  static async open(watched: Watched[]): Promise<CpuMeter> {
    const links = await Promise.all(watched.map(async (w) => {
      if (w.redisPort === undefined) return undefined;
      const link = new Redis({ port: w.redisPort, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1 });
      link.on('error', () => {});
      await link.connect();
      return link;
    }));
    return new CpuMeter(watched, links);
  }

  /** /proc is read now, synchronously; the Redis counters as soon as each server answers. */
  sample(): Promise<CpuSample> {
    const cpu = this.watched.map((w) => total(w.pids.map(cpuSeconds)));
    return Promise.all(this.links.map((link) => link?.call('INFO', 'stats', 'commandstats').then((info) => commandStats(String(info)), () => NO_ANSWER)))
      .then((commands) => ({ cpuSeconds: cpu, commands }));
  }

  /** Each watched process' CPU between two samples, per job. */
  use(from: CpuSample, to: CpuSample, jobs: number): CpuUse[] {
    return this.watched.map((w, i) => {
      const cpu = to.cpuSeconds[i]! - from.cpuSeconds[i]!;
      const before = from.commands[i];
      const after = to.commands[i];
      const commands = before && after && { seconds: after.seconds - before.seconds, scriptCalls: after.scriptCalls - before.scriptCalls, reads: after.reads - before.reads };
      return { role: w.role, label: w.label, ...perJob(cpu, commands, jobs) };
    });
  }

  close(): void {
    for (const link of this.links) link?.disconnect();
  }
}

function perJob(cpuSeconds: number, commands: CommandStats | undefined, jobs: number): Omit<CpuUse, 'role' | 'label'> {
  return {
    cpuSeconds,
    usPerJob: (cpuSeconds * 1e6) / jobs,
    ...(commands && {
      commandSeconds: commands.seconds,
      commandUsPerJob: (commands.seconds * 1e6) / jobs,
      scriptCalls: commands.scriptCalls,
      scriptCallsPerJob: commands.scriptCalls / jobs,
      reads: commands.reads,
      readsPerJob: commands.reads / jobs,
    }),
  };
}

/** The same processes over several windows (rounds): their seconds added up, over all their jobs. */
export function combineUse(windows: Array<{ cpu: CpuUse[]; jobs: number }>): CpuUse[] {
  const jobs = total(windows.map((w) => w.jobs));
  const byLabel = new Map<string, CpuUse[]>();
  for (const use of windows.flatMap((w) => w.cpu)) byLabel.set(use.label, [...(byLabel.get(use.label) ?? []), use]);
  return [...byLabel.values()].map((uses) => {
    const commands = uses.every((u) => u.commandSeconds !== undefined)
      ? { seconds: total(uses.map((u) => u.commandSeconds!)), scriptCalls: total(uses.map((u) => u.scriptCalls!)), reads: total(uses.map((u) => u.reads ?? NaN)) }
      : undefined;
    return { role: uses[0]!.role, label: uses[0]!.label, ...perJob(total(uses.map((u) => u.cpuSeconds)), commands, jobs) };
  });
}

/** A per-job figure of every process of a role added up (NaN when there is none, or one lacks it). */
export function rolePerJob(uses: CpuUse[], role: CpuRole, figure: 'usPerJob' | 'scriptCallsPerJob' | 'readsPerJob'): number {
  const of = uses.filter((u) => u.role === role);
  return of.length ? total(of.map((u) => u[figure] ?? NaN)) : NaN;
}

/** CPU µs per job of every process of a role added up (NaN when there is none). */
export const roleUsPerJob = (uses: CpuUse[], role: CpuRole): number => rolePerJob(uses, role, 'usPerJob');

/** The server's CPU µs per job and its Redis' (none: 0), what a job costs the side that serves it. */
export function serverSideUsPerJob(uses: CpuUse[]): number {
  const redis = roleUsPerJob(uses, 'redis');
  return roleUsPerJob(uses, 'server') + (Number.isNaN(redis) ? 0 : redis);
}
