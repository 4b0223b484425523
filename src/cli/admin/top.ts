// redstalk top: a live view of the tubes (counts, and jobs put and deleted per
// second) and the waiting rooms, redrawn every --interval seconds; --once
// prints one frame (its rates measured over one interval) and exits.
import type { Command } from 'commander';
import type { Client, RoomStats, TubeStats } from '../../../clients/node/src/index.js';
import { tubeStats, tubeTable } from './inspect.js';
import { adminCommand, table, withClient, type AdminOptions } from './session.js';

interface Frame { at: number; tubes: TubeStats[]; rooms: RoomStats[] }

async function frame(c: Client): Promise<Frame> {
  const [tubes, rooms] = await Promise.all([tubeStats(c), c.listRooms().then((names) => Promise.all(names.map((r) => c.statsRoom(r))))]);
  return { at: performance.now(), tubes, rooms };
}

/** Per second, from two frames: how many jobs each tube got and lost. */
export function render(prev: Frame, now: Frame, server: string): string {
  const seconds = Math.max((now.at - prev.at) / 1000, 0.001);
  const before = new Map(prev.tubes.map((t) => [t.name, t]));
  const rate = (t: TubeStats, field: 'total-jobs' | 'cmd-delete') => {
    const old = before.get(t.name);
    return old ? ((t[field] - old[field]) / seconds).toFixed(1) : '-';
  };
  const out = [`redstalk top  ${server}  ${new Date().toISOString()}  (rates over ${seconds.toFixed(1)} s)`, '',
    tubeTable(now.tubes, (t) => [rate(t, 'total-jobs'), rate(t, 'cmd-delete')], ['put/s', 'delete/s'])];
  if (now.rooms.length) {
    out.push('', table([
      ['room', 'capacity', 'inside', 'waiting', 'open', 'admitted', 'dropouts', 'rate/min', 'eta-last'],
      ...now.rooms.map((r) => [r.name, r.capacity, r.participants, r.waiting, r['open-places'], r['admitted-total'],
        r['dropouts-total'], r['admission-rate'], r['last-in-line-eta']]),
    ]));
  }
  return `${out.join('\n')}\n`;
}

export function addTopCommand(program: Command): void {
  adminCommand(program, 'top', 'a live view of tubes and rooms (q or Ctrl-C quits)')
    .option('-i, --interval <s>', 'seconds between frames', (v: string) => Number(v), 1)
    .option('--once', 'print one frame and exit')
    .action((o: AdminOptions & { interval: number; once?: boolean }) => withClient(o, async (c) => {
      if (!(o.interval > 0)) throw new Error('--interval must be a positive number of seconds');
      const wait = () => new Promise((r) => setTimeout(r, o.interval * 1000));
      let prev = await frame(c);
      await wait();
      if (o.once) {
        const now = await frame(c);
        process.stdout.write(o.json ? `${JSON.stringify({ tubes: now.tubes, rooms: now.rooms })}\n` : render(prev, now, o.server));
        return;
      }
      let quit = false;
      const stop = () => { quit = true; };
      process.once('SIGINT', stop);
      if (process.stdin.isTTY) {
        process.stdin.setRawMode(true);
        process.stdin.on('data', (d) => { if (d[0] === 0x71 || d[0] === 0x03) stop(); });
      }
      try {
        while (!quit) {
          const now = await frame(c);
          // Clear the screen and home the cursor, then the frame.
          process.stdout.write(`\x1b[2J\x1b[H${render(prev, now, o.server)}`);
          prev = now;
          await wait();
        }
      } finally {
        if (process.stdin.isTTY) process.stdin.setRawMode(false);
        process.stdin.pause();
      }
    }));
}
