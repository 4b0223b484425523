// redstalk stats | tubes | peek | kick | pause | limit | rooms | room | put: a look
// inside a running sidecar, and the few changes an operator makes by hand.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import type { Client, TubeSetting, TubeStats } from '../../../clients/node/src/index.js';
import { adminCommand, print, table, withClient, type AdminOptions } from './session.js';

function whole(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('not a whole number');
  return Number(value);
}

const PEEK_STATES = ['ready', 'delayed', 'buried'] as const;

/** Every tube with its stats, in the server's order. */
export async function tubeStats(c: Client): Promise<TubeStats[]> {
  const names = await c.listTubes();
  return Promise.all(names.map((n) => c.statsTube(n)));
}

/** A tube's limits (tube-set) in a few words, or '-'. */
function limits(t: TubeStats): string {
  const set = [t['max-reserved'] ? `${t['max-reserved']} at once` : '', t['reserve-rate'] ? `${t['reserve-rate']}/s` : ''].filter(Boolean);
  return set.length > 0 ? set.join(', ') : '-';
}

/** The options of `limit`, each a tube-set setting. */
const LIMIT_OPTIONS: ReadonlyArray<{ flag: string; setting: TubeSetting; key: 'maxReserved' | 'reserveRate' | 'dedupWindow'; help: string }> = [
  { flag: '--max-reserved <n>', setting: 'max-reserved', key: 'maxReserved', help: 'at most n of its jobs reserved at once (0: no cap)' },
  { flag: '--reserve-rate <n>', setting: 'reserve-rate', key: 'reserveRate', help: 'at most n reserves of its jobs in any one second (0: no cap)' },
  { flag: '--dedup-window <seconds>', setting: 'dedup-window', key: 'dedupWindow', help: 'how long a deleted job\'s put-with key is remembered (default 300)' },
];

export function tubeTable(tubes: readonly TubeStats[], extra?: (t: TubeStats) => Array<string | number>, extraHead: string[] = []): string {
  return table([
    ['tube', 'ready', 'urgent', 'reserved', 'delayed', 'buried', 'total', 'watching', 'waiting', 'paused', 'limits', ...extraHead],
    ...tubes.map((t) => [t.name, t['current-jobs-ready'], t['current-jobs-urgent'], t['current-jobs-reserved'], t['current-jobs-delayed'],
      t['current-jobs-buried'], t['total-jobs'], t['current-watching'], t['current-waiting'], t['pause-time-left'] > 0 ? `${t['pause-time-left']}s` : '-',
      limits(t), ...(extra ? extra(t) : [])]),
  ]);
}

export function addInspectCommands(program: Command): void {
  adminCommand(program, 'stats', 'the server\'s stats (all sidecars of one Redis)')
    .action((o: AdminOptions) => withClient(o, async (c) => {
      const s = await c.stats();
      print(o, s, () => table([['stat', 'value'], ...Object.entries(s).map(([k, v]) => [k, String(v)])]));
    }));

  adminCommand(program, 'tubes', 'every tube with its job counts')
    .action((o: AdminOptions) => withClient(o, async (c) => {
      const tubes = await tubeStats(c);
      print(o, tubes, () => tubeTable(tubes));
    }));

  adminCommand(program, 'peek <tube> [state]', `the next job of a tube in a state (${PEEK_STATES.join(', ')}; default ready)`)
    .action((tube: string, state: string | undefined, o: AdminOptions) => withClient(o, async (c) => {
      const which = (state ?? 'ready') as (typeof PEEK_STATES)[number];
      if (!PEEK_STATES.includes(which)) throw new Error(`state must be one of ${PEEK_STATES.join(', ')}`);
      await c.use(tube);
      const job = await (which === 'ready' ? c.peekReady() : which === 'delayed' ? c.peekDelayed() : c.peekBuried());
      const stats = await c.statsJob(job.id);
      print(o, { ...stats, body: job.body.toString('base64') },
        () => `${table([['stat', 'value'], ...Object.entries(stats).map(([k, v]) => [k, String(v)])])}\n${job.body.toString('utf8')}`);
    }));

  adminCommand(program, 'kick <tube> <n>', 'move up to n buried jobs of the tube (or, if none, delayed ones) to ready')
    .action((tube: string, n: string, o: AdminOptions) => withClient(o, async (c) => {
      await c.use(tube);
      const kicked = await c.kick(whole(n));
      print(o, { tube, kicked }, () => `kicked ${kicked}`);
    }));

  adminCommand(program, 'pause <tube> <seconds>', 'no reserves from the tube for that long (0 resumes it)')
    .action((tube: string, seconds: string, o: AdminOptions) => withClient(o, async (c) => {
      await c.pauseTube(tube, whole(seconds));
      print(o, { tube, paused: whole(seconds) }, () => `paused ${tube} for ${seconds} s`);
    }));

  const limit = adminCommand(program, 'limit <tube>', 'set a tube\'s limits (tube-set, kept in Redis for every sidecar); then show them');
  for (const o of LIMIT_OPTIONS) limit.option(o.flag, o.help, whole);
  limit.action((tube: string, o: AdminOptions & Partial<Record<(typeof LIMIT_OPTIONS)[number]['key'], number>>) => withClient(o, async (c) => {
    for (const { setting, key } of LIMIT_OPTIONS) if (o[key] !== undefined) await c.tubeSet(tube, setting, o[key]);
    // stats-tube prints them (defaults omitted) while the tube exists.
    const t = await c.statsTube(tube).catch(() => null);
    if (!t) return print(o, { tube, exists: false }, () => `${tube} does not exist now; its settings are kept for when it does`);
    const shown = { 'max-reserved': t['max-reserved'] ?? 0, 'reserve-rate': t['reserve-rate'] ?? 0, 'dedup-window': t['dedup-window'] ?? 300,
      'jobs-expired': t['jobs-expired'] ?? 0, 'duplicate-puts': t['duplicate-puts'] ?? 0 };
    print(o, { tube, exists: true, ...shown }, () => table([['setting', 'value'], ...Object.entries(shown).map(([k, v]) => [k, String(v)])]));
  }));

  adminCommand(program, 'rooms', 'every waiting room with its people')
    .action((o: AdminOptions) => withClient(o, async (c) => {
      const rooms = await Promise.all((await c.listRooms()).map((r) => c.statsRoom(r)));
      print(o, rooms, () => table([
        ['room', 'capacity', 'inside', 'tickets', 'waiting', 'open', 'admitted', 'dropouts', 'rate/min', 'eta-last', 'paused'],
        ...rooms.map((r) => [r.name, r.capacity, r.participants, r.tickets, r.waiting, r['open-places'], r['admitted-total'],
          r['dropouts-total'], r['admission-rate'], r['last-in-line-eta'], r.paused ? 'yes' : 'no']),
      ]));
    }));

  adminCommand(program, 'room <name>', 'one waiting room\'s stats')
    .action((name: string, o: AdminOptions) => withClient(o, async (c) => {
      const r = await c.statsRoom(name);
      print(o, r, () => table([['stat', 'value'], ...Object.entries(r).map(([k, v]) => [k, String(v)])]));
    }));

  adminCommand(program, 'put <tube> [file]', 'put one job whose body is the file (or standard input: - or none)')
    .option('--pri <n>', 'priority', whole, 1024)
    .option('--delay <s>', 'seconds before it is ready', whole, 0)
    .option('--ttr <s>', 'seconds a worker may hold it', whole, 60)
    .action((tube: string, file: string | undefined, o: AdminOptions & { pri: number; delay: number; ttr: number }) => withClient(o, async (c) => {
      const body = readFileSync(file === undefined || file === '-' ? 0 : file);
      await c.use(tube);
      const id = await c.put(body, { priority: o.pri, delay: o.delay, ttr: o.ttr });
      print(o, { tube, id }, () => `inserted ${id}`);
    }));
}
